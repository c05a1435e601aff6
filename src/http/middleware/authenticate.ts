import type { MiddlewareHandler } from "hono";
import { Unauthenticated } from "../../errors.ts";
import type { IdentityProvider } from "../../identity/provider.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { AppEnv } from "../context.ts";

/** Every route after this one knows who is calling; no credential, no entry. */
export function authenticate(provider: IdentityProvider, users: UserDirectory): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = await provider.authenticate(c.req.raw);
    if (!principal) throw new Unauthenticated();
    await users.record(principal);
    c.set("principal", principal);
    await next();
  };
}
