import type { MiddlewareHandler } from "hono";
import { Forbidden, Unauthenticated } from "../../errors.ts";
import type { IdentityProvider } from "../../identity/provider.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { AppEnv } from "../context.ts";

/** Every route after this one knows who is calling; no credential, no entry. */
export function authenticate(provider: IdentityProvider, users: UserDirectory): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = await provider.authenticate(c.req.raw);
    if (!principal) throw new Unauthenticated();
    await users.record(principal);
    // Rechecked on every request, so deactivation cuts the person's next call on every surface.
    if (users.isDeactivated(principal.id))
      throw new Forbidden("This account has been deactivated by an org admin.");
    c.set("principal", principal);
    await next();
  };
}
