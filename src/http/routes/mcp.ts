import { Hono } from "hono";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { AppEnv } from "../context.ts";
import { errorBody } from "../error-response.ts";
import type { McpEndpoint } from "../mcp/endpoint.ts";
import { workspaceGate } from "../middleware/workspace-gate.ts";

/** `/mcp/ws_…`: one URL per workspace, POST only, no session. Bare `/mcp` names none. */
export function mcpRoutes(endpoint: McpEndpoint, workspaces: WorkspaceStore): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post("/mcp/:ws", workspaceGate(workspaces), (c) =>
    endpoint.handle(c.req.raw, {
      principal: c.get("principal"),
      workspaceId: c.get("admission").workspace.id,
    }),
  );
  app.on(["GET", "DELETE"], "/mcp/:ws", (c) =>
    c.json(errorBody("method_not_allowed", "This MCP endpoint is stateless: send requests with POST."), 405, {
      allow: "POST",
    }),
  );
  app.all("/mcp", (c) =>
    c.json(
      errorBody(
        "workspace_required",
        "Bare /mcp names no workspace. Use your workspace's URL, /mcp/ws_…, as listed by GET /v1/bootstrap.",
      ),
      404,
    ),
  );
  return app;
}
