import type { Principal } from "./principal.ts";

/**
 * Authenticates a request to a Principal. Returns `undefined` when the request carries no
 * credential this provider recognises; throws `Unauthenticated` when it carries one that
 * fails, so a bad credential is never downgraded to anonymous.
 */
export interface IdentityProvider {
  readonly name: string;
  authenticate(request: Request): Promise<Principal | undefined>;
}
