import { Hono } from "hono";
import { ClientClosedRequest } from "../../errors.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { RouteDeps } from "../context.ts";
import { errorBody } from "../error-response.ts";
import { type McpEndpoint, readJsonBody } from "../mcp/endpoint.ts";
import { checkGrantedScopes } from "../mcp/granted-scopes.ts";
import { toResponse } from "../mcp/reply.ts";
import { stillAdmitted, workspaceGate } from "../middleware/workspace-gate.ts";

/** `/mcp/ws_…`: one URL per workspace, POST only, no session. Bare `/mcp` names none. */
export function mcpRoutes(endpoint: McpEndpoint, deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post("/mcp/:ws", workspaceGate(deps.workspaces, deps.users), async (c) => {
    const workspaceId = c.get("admission").workspace.id;
    const body = await readJsonBody(c.req.raw);
    // As for every body behind the gate (workspace-gate.ts): admitted again once it has arrived.
    c.get("admitAgain")?.();
    const grant = c.get("grant");
    const principal = c.get("principal");
    const requestId = c.get("requestId");
    await checkGrantedScopes(
      deps,
      workspaceId,
      grant ? { principal, grant } : { principal },
      body,
      requestId,
    );
    const request = c.req.raw;
    // As at the front door: a client gone while it was admitted gets no call made for it.
    if (request.signal.aborted) throw new ClientClosedRequest();
    const reply = await endpoint.handle(
      {
        headers: request.headers,
        webRequest: () => request,
        // The Node adapter aborts the request's signal when its response closes unfinished.
        whenAbandoned: (abandon) => request.signal.addEventListener("abort", abandon, { once: true }),
        stillAdmitted: () => stillAdmitted(deps.workspaces, deps.users, principal.id, workspaceId),
      },
      { principal, workspaceId, requestId, ...(grant && { scopes: grant.scopes }) },
      body,
    );
    // As at the front door (adr/0154): admitted again once the answer is ready, so an archive,
    // removal or deactivation that landed after the call made it gets the gate's 404 (403); a
    // stream begun before asks `stillAdmitted` before its answer, and ends without it if refused.
    c.get("admitAgain")?.();
    const response = toResponse(reply);
    // The SDK's transport builds its own Response, which the header request-log put on the context
    // does not reach; a client needs it to quote what an unexpected error's answer names.
    response.headers.set("x-request-id", requestId);
    return response;
  });
  // Every other method — GET, DELETE, HEAD, PUT, PATCH, OPTIONS alike — is the same 405: the URL
  // exists and POST is what it takes. OPTIONS is no CORS preflight here: /mcp/ws_… answers no
  // other origin (the Origin check refuses one), so there is nothing to grant.
  app.all("/mcp/:ws", (c) =>
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
