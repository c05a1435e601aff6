import {
  type AuthorizationServerMetadata,
  checkResourceAllowed,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  type FetchLike,
  IssuerMismatchError,
  LATEST_PROTOCOL_VERSION,
  type OAuthProtectedResourceMetadata,
} from "@modelcontextprotocol/client";
import { InvalidInput } from "../../../errors.ts";
import { RedirectRefused } from "../../../sources/guarded-fetch.ts";
import { cutBy } from "./until-stop.ts";

/** Everything a flow needs to know about where a server's tokens come from, found by discovery. */
export interface AuthorizationTarget {
  /** The MCP endpoint as configured. */
  serverUrl: string;
  /** The RFC 8707 resource indicator, exactly as the protected-resource metadata states it. */
  resource: string;
  /** The authorization server's `issuer`, checked equal to where its metadata was fetched. */
  issuer: string;
  metadata: AuthorizationServerMetadata;
  /** The scope the server's 401 challenge asked for, if it named one. */
  challengedScope?: string;
  /** The protected resource's `scopes_supported`, if it lists them. */
  scopesSupported?: string[];
}

/** Discovery found no authorization server Atrium may use; the message says which step and why. */
export class AuthorizationRefused extends InvalidInput {}

/**
 * Server → protected-resource metadata → authorization-server metadata (MCP authorization,
 * RFC 9728, RFC 8414). An unauthenticated request to the server gives the `WWW-Authenticate`
 * challenge whose `resource_metadata` is followed first; without one the well-known paths are
 * tried (the SDK's path-then-root fallback). Refused: no protected-resource metadata, a
 * `resource` that is not this server, no authorization server, metadata whose `issuer` is not
 * where it was fetched (a mix-up), and one that does not promise PKCE S256 (absent counts as no).
 * A well-known URL that redirects is a candidate that is not there, and the next is tried
 * (metadataGets); the probe of the server itself still fails on a redirect.
 */
export async function discoverAuthorization(
  serverUrl: string,
  fetch: FetchLike,
  options: { challenge?: Response; signal?: AbortSignal } = {},
): Promise<AuthorizationTarget> {
  const send = options.signal ? cutBy(fetch, options.signal) : fetch;
  const challenge = options.challenge ?? (await probe(serverUrl, send));
  const params = challenge ? extractWWWAuthenticateParams(challenge) : {};
  let resourceMetadata: OAuthProtectedResourceMetadata;
  try {
    resourceMetadata = await discoverOAuthProtectedResourceMetadata(
      serverUrl,
      params.resourceMetadataUrl ? { resourceMetadataUrl: params.resourceMetadataUrl } : {},
      metadataGets(send),
    );
  } catch (error) {
    throw new AuthorizationRefused(
      `The server at ${serverUrl} publishes no usable OAuth protected-resource metadata (${brief(error)}); it cannot be connected with "oauth".`,
    );
  }
  const resource = resourceMetadata.resource;
  if (!checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resource })) {
    throw new AuthorizationRefused(
      `The protected-resource metadata of ${serverUrl} names another resource (${resource.slice(0, 200)}); refused.`,
    );
  }
  const authorizationServer = resourceMetadata.authorization_servers?.[0];
  if (!authorizationServer) {
    throw new AuthorizationRefused(
      `The protected-resource metadata of ${serverUrl} names no authorization server; refused.`,
    );
  }
  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServer, {
      fetchFn: metadataGets(send),
      protocolVersion: LATEST_PROTOCOL_VERSION,
    });
  } catch (error) {
    if (error instanceof IssuerMismatchError) {
      throw new AuthorizationRefused(
        `The authorization server metadata fetched from ${authorizationServer} names another issuer; refused (RFC 8414 §3.3).`,
      );
    }
    throw new AuthorizationRefused(
      `Could not read the authorization server metadata of ${authorizationServer}: ${brief(error)}.`,
    );
  }
  if (!metadata) {
    throw new AuthorizationRefused(`${authorizationServer} publishes no authorization server metadata.`);
  }
  if (!metadata.code_challenge_methods_supported?.includes("S256")) {
    throw new AuthorizationRefused(
      `The authorization server ${metadata.issuer} does not advertise PKCE S256 (code_challenge_methods_supported); refused.`,
    );
  }
  return {
    serverUrl,
    resource,
    issuer: metadata.issuer,
    metadata,
    ...(params.scope ? { challengedScope: params.scope } : {}),
    ...(resourceMetadata.scopes_supported ? { scopesSupported: resourceMetadata.scopes_supported } : {}),
  };
}

/**
 * `fetch` for the metadata GETs, which carry no credential, with a redirect answered as a 404: the
 * SDK then tries its next candidate (RFC 9728's root URL, RFC 8414's and OIDC's next URL), as it
 * does for a front end that answers an unknown path with a 404 — many answer with a redirect to a
 * login page instead. The redirect is still not followed; a request that carries a credential (an
 * MCP request, a token or registration request) keeps failing on one.
 */
function metadataGets(fetch: FetchLike): FetchLike {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const method = (init?.method ?? "GET").toUpperCase();
      if (error instanceof RedirectRefused && method === "GET") return new Response(null, { status: 404 });
      throw error;
    }
  };
}

/** The server's answer to a request without a token: its 401 carries the challenge. */
async function probe(serverUrl: string, fetch: FetchLike): Promise<Response | undefined> {
  let response: Response;
  try {
    response = await fetch(serverUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
  } catch (error) {
    throw new AuthorizationRefused(`Could not reach ${serverUrl}: ${brief(error)}.`);
  }
  await response.body?.cancel().catch(() => undefined);
  return response.status === 401 ? response : undefined;
}

function brief(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 200);
}
