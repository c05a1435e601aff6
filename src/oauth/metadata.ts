import { workspaceMcpUrl } from "../web/urls.ts";
import { CLIENT_AUTH_METHODS } from "./client-rules.ts";
import type { OAuthMetadata, OAuthProtectedResourceMetadata } from "./oauth-types.ts";
import { SCOPE_READ, SCOPE_WRITE, SUPPORTED_SCOPES } from "./scopes.ts";

/** RFC 8414 metadata: the issuer is the public URL exactly, and every endpoint hangs off it. */
export function authorizationServerMetadata(publicUrl: string): OAuthMetadata {
  return {
    issuer: publicUrl,
    authorization_endpoint: `${publicUrl}/oauth/authorize`,
    token_endpoint: `${publicUrl}/oauth/token`,
    registration_endpoint: `${publicUrl}/oauth/register`,
    revocation_endpoint: `${publicUrl}/oauth/revoke`,
    jwks_uri: `${publicUrl}/oauth/jwks`,
    scopes_supported: [...SUPPORTED_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

/**
 * RFC 9728 metadata for one workspace's MCP URL. It does not depend on whether the
 * workspace exists, so it cannot tell a stranger that it does.
 */
export function protectedResourceMetadata(
  publicUrl: string,
  workspaceId: string,
): OAuthProtectedResourceMetadata {
  return {
    resource: workspaceMcpUrl(publicUrl, workspaceId),
    authorization_servers: [publicUrl],
    scopes_supported: [SCOPE_READ, SCOPE_WRITE],
    bearer_methods_supported: ["header"],
    resource_name: "Atrium workspace",
  };
}

/** Where a workspace's protected-resource metadata lives; named in WWW-Authenticate challenges. */
export function resourceMetadataUrl(publicUrl: string, workspaceId: string): string {
  return `${publicUrl}/.well-known/oauth-protected-resource/mcp/${workspaceId}`;
}
