import { isLoopbackHost } from "../../../instance/load.ts";

/** The instance-level addresses of connection authorization, built from the public URL. */
export const OAUTH_GO_PATH = "/v1/connections/oauth/go/:flow";
export const OAUTH_CALLBACK_PATH = "/v1/connections/oauth/callback";
/** Outside /v1: an authorization server fetches it with no credential. */
export const CLIENT_METADATA_PATH = "/connections/oauth/client-metadata.json";

export interface OAuthPaths {
  callback: string;
  go(flowId: string): string;
  /** The client ID metadata document's URL: only for an https public URL that is not loopback. */
  metadataDocument?: string;
  /** Whether the binding cookie can be `__Host-` (Secure): the public URL is https. */
  secure: boolean;
}

export function oauthPaths(publicUrl: string): OAuthPaths {
  const url = new URL(publicUrl);
  const secure = url.protocol === "https:";
  const servesDocument = secure && !isLoopbackHost(url.hostname);
  return {
    callback: `${publicUrl}${OAUTH_CALLBACK_PATH}`,
    go: (flowId) => `${publicUrl}${OAUTH_GO_PATH.replace(":flow", flowId)}`,
    ...(servesDocument ? { metadataDocument: `${publicUrl}${CLIENT_METADATA_PATH}` } : {}),
    secure,
  };
}

/** The binding cookie of one flow: `__Host-` over https (Secure, Path=/, no Domain), a plain name on loopback http. */
export function bindingCookieName(flowId: string, secure: boolean): string {
  return `${secure ? "__Host-" : ""}atrium-oauth-${flowId}`;
}
