import { Unauthenticated } from "../../errors.ts";
import { derivePrincipalId, type Principal } from "../principal.ts";
import type { IdentityProvider } from "../provider.ts";

export const DEV_ISSUER = "atrium:dev";

export const DEV_PRINCIPAL: Principal = Object.freeze({
  id: derivePrincipalId(DEV_ISSUER, "developer"),
  displayName: "Local Developer",
  email: "developer@localhost",
  orgRole: "admin",
});

/**
 * `dev`: every request is the one local developer, an org admin. It is chosen in
 * instance.json like any provider, never assumed. It accepts no credentials of its own
 * (Atrium's access tokens are checked before a provider is asked), so a request that
 * presents one is refused rather than silently treated as the developer.
 */
export function createDevProvider(): IdentityProvider {
  return {
    name: "dev",
    async authenticate(request) {
      if (request.headers.has("authorization")) {
        throw new Unauthenticated(
          "The dev identity provider accepts no credentials; send the request without an Authorization header.",
        );
      }
      return DEV_PRINCIPAL;
    },
  };
}
