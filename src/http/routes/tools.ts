import { Hono } from "hono";
import { InvalidInput } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonObject, requireString } from "../../web/json-body.ts";
import type { RouteDeps } from "../context.ts";

/** The workspace's tool surface over REST, through the same router as /mcp/ws_…. */
export function toolRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/tools", async (c) => {
    const workspaceId = c.get("admission").workspace.id;
    const principalId = c.get("principal").id;
    const tools = await deps.registries.use(workspaceId, (registry) =>
      deps.router.listTools(registry, principalId),
    );
    // The same list tools/list gives, bound skills included.
    return c.json({ tools: await deps.guidance.annotateTools(workspaceId, principalId, tools) });
  });

  app.post("/tools/call", async (c) => {
    const workspaceId = c.get("admission").workspace.id;
    const body = await readJsonObject(c);
    const name = requireString(body, "name");
    const args = body.arguments ?? {};
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new InvalidInput('Field "arguments" must be a JSON object.');
    }
    const caller = { principalId: c.get("principal").id, workspaceId };
    const result = await deps.dispatch.call(caller, name, args as Record<string, unknown>, {
      requestId: c.get("requestId"),
    });
    return c.json(result);
  });

  return app;
}
