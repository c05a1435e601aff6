import { Hono } from "hono";
import { Forbidden } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { SigningKeys } from "../keys.ts";

/** Org admins rotate the access-token signing key; the app's /v1 authentication runs first. */
export function signingKeyRoutes(deps: { keys: SigningKeys; log: Logger }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post("/v1/oauth/signing-keys/rotate", async (c) => {
    const principal = c.get("principal");
    if (principal.orgRole !== "admin") {
      throw new Forbidden("Only an org admin can rotate the OAuth signing key.");
    }
    const fresh = await deps.keys.rotate();
    deps.log.info({ kid: fresh.kid, by: principal.id }, "oauth signing key rotated");
    return c.json({
      current: fresh.kid,
      kids: deps.keys.jwks().keys.map((key) => key.kid),
    });
  });

  return app;
}
