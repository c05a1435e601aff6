import { createHash } from "node:crypto";
import { isLoopbackHost } from "../../../instance/load.ts";

/** The instance-level addresses of connection authorization, built from the public URL. */
export const OAUTH_GO_PATH = "/v1/connections/oauth/go/:flow";
/**
 * The shared callback: only for authorization servers that promise RFC 9207 `iss`, whose every
 * answer then names its issuer (ADR 0077).
 */
export const OAUTH_CALLBACK_PATH = "/v1/connections/oauth/callback";
/** The callback of one authorization server, by its issuer key: for those that do not promise `iss`. */
export const OAUTH_ISSUER_CALLBACK_PATH = "/v1/connections/oauth/callback/:issuer";
/** Outside /v1: an authorization server fetches it with no credential. */
export const CLIENT_METADATA_PATH = "/connections/oauth/client-metadata.json";

export interface OAuthPaths {
  /** The shared callback (an issuer that promises `iss`; the client ID metadata document's one redirect URI). */
  callback: string;
  /** The callback of the issuer whose key is `key` (issuerKey). */
  issuerCallback(key: string): string;
  go(flowId: string): string;
  /**
   * Where a workspace admin (a personal connection's owner) starts a sign-in of their own, `POST`
   * with `{"scopes"?}`: a per-person flow, never the step-up's slot, so it is what is left to one
   * locked out of a flow opened in another browser.
   */
  start(workspaceId: string, name: string): string;
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
    issuerCallback: (key) => `${publicUrl}${OAUTH_ISSUER_CALLBACK_PATH.replace(":issuer", key)}`,
    go: (flowId) => `${publicUrl}${OAUTH_GO_PATH.replace(":flow", flowId)}`,
    start: (workspaceId, name) =>
      `${publicUrl}/v1/workspaces/${encodeURIComponent(workspaceId)}/connections/${encodeURIComponent(name)}/oauth/start`,
    ...(servesDocument ? { metadataDocument: `${publicUrl}${CLIENT_METADATA_PATH}` } : {}),
    secure,
  };
}

/** The binding cookie of one flow: `__Host-` over https (Secure, Path=/, no Domain), a plain name on loopback http. */
export function bindingCookieName(flowId: string, secure: boolean): string {
  return `${secure ? "__Host-" : ""}atrium-oauth-${flowId}`;
}

/**
 * An issuer's path segment in its callback: the first 16 bytes of the SHA-256 of the issuer
 * exactly as its metadata names it, base64url (22 characters). An operator computes it with
 * `printf %s "$ISSUER" | openssl dgst -sha256 -binary | head -c 16 | basenc --base64url | tr -d =`.
 */
export function issuerKey(issuer: string): string {
  return createHash("sha256").update(issuer).digest().subarray(0, 16).toString("base64url");
}

/**
 * The redirect URI of a flow at `issuer` (ADR 0077): the shared callback where its authorization
 * server promises RFC 9207 `iss` (each answer then says whose it is), else the issuer's own, so an
 * answer arriving at another issuer's callback is known for a mix-up (RFC 9700 §4.4.2).
 */
export function redirectUriFor(paths: OAuthPaths, issuer: string, promisesIss: boolean): string {
  return promisesIss ? paths.callback : paths.issuerCallback(issuerKey(issuer));
}
