import type { Principal } from "./principal.ts";

/**
 * Authenticates a request to a Principal. Returns `undefined` when the request carries no
 * credential this provider recognises; throws `Unauthenticated` when it carries one that
 * fails, so a bad credential is never downgraded to anonymous.
 */
export interface IdentityProvider {
  readonly name: string;
  authenticate(request: CredentialSource, surface: Surface): Promise<Principal | undefined>;
}

/**
 * What a provider may read of a request: its headers. A web `Request` is one; the MCP front door
 * passes Node's headers behind the same two methods, without building a `Request`.
 */
export interface CredentialSource {
  readonly headers: Pick<Headers, "get" | "has">;
}

/**
 * Where the request arrived. A provider's own token is for REST; at /mcp/ws_… only
 * configured first-party clients may present one, everyone else authorizes through Atrium.
 */
export type Surface = "mcp" | "rest";
