import { Hono } from "hono";
import { NotFound } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { ClientRegistry } from "../clients.ts";
import type { Grants } from "../grants.ts";

/**
 * A person's authorized applications: which client may act in which workspace with which
 * scopes, and the way to take that back. Only one's own grants are listed or revoked; any
 * other id is the same 404 as one that does not exist.
 */
export function personGrantRoutes(deps: {
  grants: Grants;
  clients: Pick<ClientRegistry, "storedName">;
  publicUrl: () => string;
  log: Logger;
}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/v1/oauth/grants", async (c) => {
    const records = await deps.grants.listFor(c.get("principal").id);
    const grants = await Promise.all(
      records.map(async (grant) => {
        return {
          id: grant.grantId,
          clientId: grant.clientId,
          clientName: grant.clientName ?? (await deps.clients.storedName(grant.clientId)) ?? null,
          resource: deps.grants.audienceOf(grant),
          workspaceId: grant.workspaceId,
          scopes: grant.scopes,
          createdAt: new Date(grant.createdAt).toISOString(),
          expiresAt: new Date(grant.absoluteExpiresAt).toISOString(),
        };
      }),
    );
    return c.json({ grants });
  });

  app.delete("/v1/oauth/grants/:grant", async (c) => {
    const principalId = c.get("principal").id;
    const grant = await deps.grants.get(c.req.param("grant"));
    if (!grant || grant.principalId !== principalId || grant.revokedAt !== undefined) {
      throw new NotFound("grant_not_found", "You have no application access with that id.");
    }
    await deps.grants.revoke(grant.grantId);
    deps.log.info({ grantId: grant.grantId, clientId: grant.clientId }, "oauth grant revoked by its person");
    return c.body(null, 204);
  });

  return app;
}
