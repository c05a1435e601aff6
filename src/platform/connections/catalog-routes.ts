import { type Context, Hono } from "hono";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminJsonObject } from "../../web/json-body.ts";
import { type AccessCheck, withRoleRequired } from "../../workspace/access-check.ts";
import { notAdmin, requireAdmin } from "../../workspace/gate.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { Catalog, CatalogEntry } from "./catalog.ts";
import { type ConnectFromCatalog, connectRequestFor } from "./catalog-connect.ts";
import { CATALOG_META_KEY, connectabilityOf } from "./catalog-entry.ts";

// The catalog over REST. A listing has the registry API's shape (`GET /v0/servers`):
// `{"servers": [{"server": <server.json>, "_meta": {…}}], "metadata": {"count"}}`, with Atrium's
// facts about each entry under `_meta["dev.atrium/catalog"]`.

/** One entry as listed: its server.json untouched, and Atrium's id, scope and connectability. */
export function entryView(entry: CatalogEntry): Record<string, unknown> {
  const reach = connectabilityOf(entry.server);
  const atrium: Record<string, unknown> = {
    id: entry.id,
    scope: entry.scope,
    connectable: reach.connectable,
  };
  if (reach.connectable) {
    atrium.url = reach.url;
    if (reach.header) atrium.header = reach.header.name;
  } else {
    atrium.reason = reach.reason;
  }
  if (entry.addedBy !== undefined) atrium.addedBy = entry.addedBy;
  if (entry.addedAt !== undefined) atrium.addedAt = entry.addedAt;
  return { server: entry.server, _meta: { [CATALOG_META_KEY]: atrium } };
}

function listing(entries: CatalogEntry[]): {
  servers: Record<string, unknown>[];
  metadata: { count: number };
} {
  return { servers: entries.map(entryView), metadata: { count: entries.length } };
}

/**
 * `GET /v1/catalog`: the operator's catalog, for any signed-in person (authentication is the
 * app's, before this). An org admin also sees the files that were skipped, and why.
 */
export function catalogRoutes(catalog: Catalog): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/v1/catalog", async (c) => {
    const body: Record<string, unknown> = listing(await catalog.instanceEntries());
    if (c.get("principal").orgRole === "admin") body.problems = await catalog.instanceProblems();
    return c.json(body);
  });
  return app;
}

/**
 * A workspace's catalog, relative to `/v1/workspaces/:ws` and mounted behind the gate: members
 * read it; admins add and remove its own entries and connect from any entry.
 */
export function catalogWorkspaceRoutes(
  catalog: Catalog,
  connect: ConnectFromCatalog,
  workspaces: Pick<WorkspaceStore, "roleOf">,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // The caller's access and admin role, asked again where an entry's change is seen: an admin
  // demoted while it waited on the catalog's lock or the disk changes nothing (adr/0154, amended).
  const stillAdmin = (c: Context<AppEnv>): AccessCheck =>
    withRoleRequired(
      c.get("access"),
      workspaces,
      c.get("principal").id,
      c.get("admission").workspace.id,
      "admin",
      notAdmin,
    );

  app.get("/catalog", async (c) => {
    const admission = c.get("admission");
    const body: Record<string, unknown> = listing(await catalog.list(admission.workspace.id));
    if (admission.role === "admin") body.problems = await catalog.workspaceProblems(admission.workspace.id);
    return c.json(body);
  });

  app.get("/catalog/:id", async (c) =>
    c.json(entryView(await catalog.get(c.get("admission").workspace.id, c.req.param("id")))),
  );

  // The body is a server.json; its id comes from its name.
  app.post("/catalog", async (c) => {
    const body = await readAdminJsonObject(c);
    const admission = c.get("admission");
    const entry = await catalog.add(admission.workspace.id, c.get("principal").id, body, stillAdmin(c));
    return c.json(entryView(entry), 201);
  });

  app.delete("/catalog/:id", async (c) => {
    const admission = c.get("admission");
    requireAdmin(admission);
    await catalog.remove(admission.workspace.id, c.req.param("id"), stillAdmin(c));
    return c.body(null, 204);
  });

  // `{"name"?, "auth"?}` → 201 with the connection and its first snapshot, as POST …/connections.
  app.post("/catalog/:id/connect", async (c) => {
    const body = await readAdminJsonObject(c);
    const admission = c.get("admission");
    const entry = await catalog.get(admission.workspace.id, c.req.param("id"));
    const connection = await connect(
      admission.workspace.id,
      c.get("principal").id,
      connectRequestFor(entry, body),
    );
    return c.json(connection as Record<string, unknown>, 201);
  });

  return app;
}
