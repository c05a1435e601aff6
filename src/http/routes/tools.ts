import { Hono } from "hono";
import * as z from "zod";
import { platformInput } from "../../platform/platform-tool.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { readJsonBodyAs } from "../../web/json-body.ts";
import type { RouteDeps } from "../context.ts";

// Strict, as every REST body is: `args` for `arguments` called the tool with no arguments (ADR 0095).
// `_meta` is taken so MCP's params can be sent as they are, and ignored: its progress token asks
// for notifications, and a REST call answers with its result alone. MCP's own `tools/call` ignores
// any params key it does not know, which a later revision may define (docs/mcp.md).
const callBody = platformInput({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});

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
    const { name, arguments: args = {} } = await readJsonBodyAs(c, callBody);
    const caller = { principalId: c.get("principal").id, workspaceId };
    // As on /mcp/ws_… (adr/0154): an archive, removal or deactivation while the call runs cancels
    // it (the gate's 404, 403 deactivated), and one that lands after its result is refused here
    // instead of the result. In memory, as the gate.
    const result = await deps.dispatch.callUntilAccessEnds(caller, name, args, {
      requestId: c.get("requestId"),
    });
    c.get("admitAgain")?.();
    return c.json(result);
  });

  return app;
}
