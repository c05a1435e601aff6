import { Hono } from "hono";
import { InvalidInput } from "../../errors.ts";
import { isPersonalSourceName } from "../../sources/tool-names.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readAdminBodyAs, readJsonBodyAs } from "../../web/json-body.ts";
import { takesQuery } from "../../web/query.ts";
import type { CallerConnections } from "./caller-connections.ts";
import { addInput, authorizeBody } from "./server.ts";

/**
 * Connections over REST, behind the workspace gate; the same service as the tools. Every lookup is
 * the caller's: a `my_…` name is one of their own personal connections (ADR 0042).
 */
export function connectionRoutes(connections: CallerConnections): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const ws = (c: { get(key: "admission"): { workspace: { id: string } } }) => c.get("admission").workspace.id;
  const me = (c: { get(key: "principal"): { id: string } }) => c.get("principal").id;

  app.get("/connections", async (c) => c.json({ connections: await connections.list(ws(c), me(c)) }));

  app.post("/connections", async (c) => {
    const body = await readJsonBodyAs(c, addInput);
    return c.json(await connections.add(ws(c), me(c), body), 201);
  });

  app.get("/connections/:name", async (c) =>
    c.json(await connections.view(ws(c), me(c), c.req.param("name"))),
  );

  // Re-authorizes an OAuth connection: a new flow from the record as it is now, `{scopes?}` to ask for others.
  app.post("/connections/:name/oauth/start", async (c) => {
    const name = c.req.param("name");
    // A workspace connection's flow is an admin's to start: anyone else is refused whatever the
    // body (the service asks again); a `my_` one is the caller's own.
    const read = isPersonalSourceName(name) ? readJsonBodyAs : readAdminBodyAs;
    const body = c.req.header("content-type") ? await read(c, authorizeBody) : {};
    return c.json(await connections.startAuthorization(ws(c), c.get("principal").id, name, body));
  });

  app.delete("/connections/:name", async (c) => {
    await connections.remove(ws(c), me(c), c.req.param("name"));
    return c.body(null, 204);
  });

  app.post("/connections/:name/disable", async (c) =>
    c.json(await connections.setDisabled(ws(c), me(c), c.req.param("name"), true)),
  );

  app.post("/connections/:name/enable", async (c) =>
    c.json(await connections.setDisabled(ws(c), me(c), c.req.param("name"), false)),
  );

  app.get("/connections/:name/tools", async (c) =>
    c.json(await connections.snapshot(ws(c), me(c), c.req.param("name"))),
  );

  app.post("/connections/:name/tools/refresh", async (c) =>
    c.json(await connections.refresh(ws(c), me(c), c.req.param("name"))),
  );

  app.get("/connections/:name/tools/snapshots", takesQuery("from", "to"), async (c) => {
    const name = c.req.param("name");
    const { from, to } = c.req.valid("query");
    if (from === undefined && to === undefined)
      return c.json({ snapshots: await connections.snapshots(ws(c), me(c), name) });
    return c.json(await connections.diff(ws(c), me(c), name, version(from, "from"), version(to, "to")));
  });

  app.get("/connections/:name/tools/snapshots/:version", async (c) =>
    c.json(
      await connections.snapshot(
        ws(c),
        me(c),
        c.req.param("name"),
        version(c.req.param("version"), "version"),
      ),
    ),
  );

  return app;
}

function version(value: string | undefined, field: string): number {
  if (value === undefined || !/^[1-9][0-9]{0,8}$/.test(value)) {
    throw new InvalidInput(
      `${field} is a snapshot version, a whole number from 1; give both from and to to compare two.`,
    );
  }
  return Number(value);
}
