import { Hono } from "hono";
import { InsufficientScope } from "../../errors.ts";
import { resourceMetadataUrl } from "../../oauth/metadata.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { RouteDeps } from "../context.ts";
import { errorBody } from "../error-response.ts";
import { type McpEndpoint, readJsonBody } from "../mcp/endpoint.ts";
import { requiredScopes } from "../mcp/required-scopes.ts";
import { workspaceGate } from "../middleware/workspace-gate.ts";

/** `/mcp/ws_…`: one URL per workspace, POST only, no session. Bare `/mcp` names none. */
export function mcpRoutes(endpoint: McpEndpoint, deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post("/mcp/:ws", workspaceGate(deps.workspaces), async (c) => {
    const workspaceId = c.get("admission").workspace.id;
    const body = await readJsonBody(c.req.raw);
    const grant = c.get("grant");
    if (grant) {
      const required = await requiredScopes(body, (name) =>
        deps.registries.use(workspaceId, (registry) =>
          deps.router.findTool(registry, c.get("principal").id, name),
        ),
      );
      const missing = required.filter((scope) => !grant.scopes.includes(scope));
      if (missing.length > 0) {
        // RFC 6750 §3.1 and the MCP step-up rule: name what was granted plus what is needed.
        const scope = [...new Set([...grant.scopes, ...required])].join(" ");
        throw new InsufficientScope(
          `This call needs the ${missing.join(" and ")} scope, which this token was not granted; authorize again asking for it.`,
          `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${resourceMetadataUrl(deps.publicUrl(), workspaceId)}"`,
        );
      }
    }
    const requestId = c.get("requestId");
    const response = await endpoint.handle(
      c.req.raw,
      { principal: c.get("principal"), workspaceId, requestId, ...(grant && { scopes: grant.scopes }) },
      body,
    );
    // The SDK's transport builds its own Response, which the header request-log put on the context
    // does not reach; a client needs it to quote what an unexpected error's answer names.
    response.headers.set("x-request-id", requestId);
    return response;
  });
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
