import type { Principal } from "./principal.ts";

/**
 * Authenticates a request to a Principal. Returns `undefined` when the request carries no
 * credential this provider recognises; throws `Unauthenticated` when it carries one that
 * fails, so a bad credential is never downgraded to anonymous.
 */
export interface IdentityProvider {
  readonly name: string;
  authenticate(request: Request, surface: Surface): Promise<Principal | undefined>;
}

/**
 * Where the request arrived. A provider's own token is for REST; at /mcp/ws_… only
 * configured first-party clients may present one, everyone else authorizes through Atrium.
 */
export type Surface = "mcp" | "rest";
