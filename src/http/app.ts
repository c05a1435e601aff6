import { Hono } from "hono";
import type { IdentityProvider } from "../identity/provider.ts";
import type { Logger } from "../log.ts";
import { PLATFORM_APPS } from "../platform/index.ts";
import type { AppEnv, RouteDeps } from "./context.ts";
import { errorBody, errorHandler } from "./error-response.ts";
import type { McpEndpoint } from "./mcp/endpoint.ts";
import { authenticate } from "./middleware/authenticate.ts";
import { bodyLimit } from "./middleware/body-limit.ts";
import { originGuard } from "./middleware/origin-guard.ts";
import { requestLog } from "./middleware/request-log.ts";
import { bootstrapRoutes } from "./routes/bootstrap.ts";
import { healthRoutes } from "./routes/health.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { memberRoutes } from "./routes/members.ts";
import { toolRoutes } from "./routes/tools.ts";
import { userRoutes } from "./routes/users.ts";
import { workspaceRoutes } from "./routes/workspaces.ts";

const UPLOAD_PATH = /^\/v1\/workspaces\/[^/]+\/files$/;

/**
 * The order of middleware is the security story: log every request, refuse foreign
 * hosts and origins, cap the body, authenticate, and only then let a route (which gates
 * its workspace itself) see the request.
 */
export function createApp(
  deps: RouteDeps,
  provider: IdentityProvider,
  endpoint: McpEndpoint,
  log: Logger,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(errorHandler(log));
  app.notFound((c) => c.json(errorBody("not_found", `No route for ${c.req.method} ${c.req.path}.`), 404));

  app.use("*", requestLog(log));
  app.route("/", healthRoutes());
  app.use("*", originGuard(deps.publicUrl));
  app.use(
    "*",
    bodyLimit(deps.maxBodyBytes, (path, method) => method === "POST" && UPLOAD_PATH.test(path)),
  );
  app.use("/mcp/*", authenticate(provider, deps.users));
  app.use("/v1/*", authenticate(provider, deps.users));

  app.route("/", mcpRoutes(endpoint, deps.workspaces));
  app.route("/", bootstrapRoutes(deps));
  app.route("/", workspaceRoutes(deps));
  app.route("/", memberRoutes(deps));
  app.route("/", toolRoutes(deps));
  app.route("/", userRoutes(deps));
  for (const platformApp of PLATFORM_APPS) {
    if (platformApp.routes) app.route("/", platformApp.routes(deps));
  }
  return app;
}
