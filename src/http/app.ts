import { Hono } from "hono";
import type { OidcClient } from "../identity/oidc-client.ts";
import type { IdentityProvider } from "../identity/provider.ts";
import type { Sessions } from "../identity/sessions.ts";
import type { Logger } from "../log.ts";
import type { ParkedRequests } from "../oauth/authorize/parked.ts";
import type { PendingAuthorizations } from "../oauth/authorize/pending.ts";
import { authorizeRoutes } from "../oauth/authorize/routes.ts";
import { capsItsOwnOAuthBody, isOAuthPublicPath } from "../oauth/routes/cors.ts";
import type { AuthorizationServer } from "../oauth/server.ts";
import type { StartedApp } from "../platform/app.ts";
import { signInRoutes } from "../signin/routes.ts";
import type { AppEnv } from "../web/app-env.ts";
import { queryOnlyWhereTaken } from "../web/query.ts";
import type { RouteDeps } from "./context.ts";
import { errorBody, errorHandler } from "./error-response.ts";
import { eventStreamRoutes } from "./event-stream.ts";
import type { McpEndpoint } from "./mcp/endpoint.ts";
import { type Authenticators, authenticateMcp, authenticateRest } from "./middleware/authenticate.ts";
import { bodyLimit } from "./middleware/body-limit.ts";
import { headWithoutBody } from "./middleware/head-without-body.ts";
import { type OriginCheck, originCheck, originGuard } from "./middleware/origin-guard.ts";
import { requestLog } from "./middleware/request-log.ts";
import { workspaceGate } from "./middleware/workspace-gate.ts";
import { bootstrapRoutes } from "./routes/bootstrap.ts";
import { healthRoutes } from "./routes/health.ts";
import { homeActionRoutes } from "./routes/home-actions.ts";
import { invitationRoutes, invitationsFor, workspaceInvitationRoutes } from "./routes/invitations.ts";
import { mcpRoutes } from "./routes/mcp.ts";
import { type GrantRevoker, memberRoutes } from "./routes/members.ts";
import { toolRoutes } from "./routes/tools.ts";
import { userRoutes } from "./routes/users.ts";
import { workspaceItemRoutes, workspaceRoutes } from "./routes/workspaces.ts";

/** A path under `/v1/workspaces/:ws`, and the part of it after the workspace. */
const WORKSPACE_ROUTE = /^\/v1\/workspaces\/[^/]+(\/.*)$/;

/** Who can vouch for a caller: the identity provider, browser sessions, Atrium's own OAuth server. */
export interface Security {
  /** The configured OpenID provider (`oidc`, `workos`); `undefined` under `dev`. */
  oidc: OidcClient | undefined;
  provider: IdentityProvider;
  sessions: Sessions;
  oauth: AuthorizationServer;
  pending: PendingAuthorizations;
  parked: ParkedRequests;
}

/** One route as hono registered it: `ALL` for `app.all`. */
export interface RegisteredRoute {
  method: string;
  path: string;
}

/** The routes an app answers, each once; middleware (registered on a `*` path) is left out. */
export function registeredRoutes(app: Hono<AppEnv>): RegisteredRoute[] {
  const seen = new Map<string, RegisteredRoute>();
  for (const { method, path } of app.routes) {
    if (!path.includes("*")) seen.set(`${method} ${path}`, { method, path });
  }
  return [...seen.values()];
}

/**
 * The order of middleware is the security story: log every request, refuse foreign
 * hosts and origins (except on the OAuth endpoints browser-based clients call from their
 * own origin, which take no cookie), cap the body, authenticate /mcp and /v1, and only
 * then let a route (which gates its workspace itself) see the request.
 */
export function createApp(
  deps: RouteDeps,
  security: Security,
  endpoint: McpEndpoint,
  log: Logger,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(errorHandler(log));
  app.notFound((c) => c.json(errorBody("not_found", `No route for ${c.req.method} ${c.req.path}.`), 404));

  app.use("*", requestLog(log));
  app.use("*", headWithoutBody());
  app.route("/", healthRoutes());
  app.use("*", originGuard(instanceOriginCheck(deps)));
  app.use(
    "*",
    bodyLimit({
      maxBodyBytes: deps.maxBodyBytes,
      streamedLimit: streamedBodyLimits(deps.apps),
      capsItsOwnBody: capsItsOwnOAuthBody,
    }),
  );
  const authenticators = authenticatorsFor(deps, security);
  app.use("/mcp/*", authenticateMcp(authenticators));
  app.use("/v1/*", authenticateRest(authenticators));
  app.use("/v1/*", queryOnlyWhereTaken());

  app.route("/", security.oauth.routes());
  app.route(
    "/",
    authorizeRoutes({
      clients: security.oauth.clients,
      codes: security.oauth.codes,
      pending: security.pending,
      parked: security.parked,
      sessions: security.sessions,
      users: deps.users,
      workspaces: deps.workspaces,
      publicUrl: deps.publicUrl,
      log,
    }),
  );
  app.route(
    "/",
    signInRoutes({
      oidc: security.oidc,
      workspaces: deps.workspaces,
      invitationsFor: (principalId) => invitationsFor(deps, principalId),
      sessions: security.sessions,
      users: deps.users,
      publicUrl: deps.publicUrl,
      log,
    }),
  );
  app.route("/", homeActionRoutes(deps, security.sessions, security.oauth.grants));
  app.route("/", mcpRoutes(endpoint, deps));
  app.route("/", bootstrapRoutes(deps));
  app.route("/", workspaceRoutes(deps));
  app.route("/", invitationRoutes(deps));
  app.route("/", userRoutes(deps, security.oauth.grants));
  app.route("/v1/workspaces/:ws", workspaceApp(deps, security.oauth.grants));
  for (const platformApp of deps.apps) {
    if (platformApp.routes) app.route("/", platformApp.routes);
  }
  return app;
}

/** Who can vouch for a caller, as the authentication middleware and the MCP front door take it. */
export function authenticatorsFor(deps: RouteDeps, security: Security): Authenticators {
  return {
    provider: security.provider,
    sessions: security.sessions,
    tokens: security.oauth.tokens,
    users: deps.users,
    publicUrl: deps.publicUrl,
  };
}

/** The Host/Origin check of this instance, for the hono guard and the MCP front door alike. */
export function instanceOriginCheck(deps: Pick<RouteDeps, "publicUrl">): OriginCheck {
  return originCheck(deps.publicUrl, isOAuthPublicPath);
}

/**
 * The wall, once: every route of one workspace is mounted here, behind the gate, with paths
 * relative to /v1/workspaces/:ws. Whatever is registered on this app cannot be reached without
 * an admission (test/integration/wall-every-route.test.ts).
 */
function workspaceApp(deps: RouteDeps, grants: GrantRevoker): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("*", workspaceGate(deps.workspaces, deps.users));
  app.route("/", workspaceItemRoutes(deps, grants));
  app.route("/", memberRoutes(deps, grants));
  app.route("/", workspaceInvitationRoutes(deps));
  app.route("/", toolRoutes(deps));
  app.route("/", eventStreamRoutes(deps.eventLog, deps.timers));
  for (const platformApp of deps.apps) {
    if (platformApp.workspaceRoutes) app.route("/", platformApp.workspaceRoutes);
  }
  return app;
}

/** The limit of each app's streamed workspace routes (an upload), by method and path. */
function streamedBodyLimits(
  apps: readonly StartedApp[],
): (path: string, method: string) => number | undefined {
  const bodies = apps.flatMap((app) => app.streamedBodies ?? []);
  return (path, method) => {
    const relative = WORKSPACE_ROUTE.exec(path)?.[1];
    return bodies.find((body) => body.method === method && body.path === relative)?.maxBytes;
  };
}
