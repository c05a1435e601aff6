import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { Principal } from "../../identity/principal.ts";
import type { Logger } from "../../log.ts";
import type { ToolDispatch } from "../../sources/dispatch.ts";
import type { WorkspaceGuidance } from "../../sources/guidance.ts";
import type { IdleCache } from "../../sources/idle-cache.ts";
import type { ProgressListener } from "../../sources/mcp-source.ts";
import type { SourceRegistry } from "../../sources/registry.ts";
import type { Router } from "../../sources/router.ts";
import { ATRIUM_VERSION } from "../../version.ts";
import { callResultForEra } from "./call-result.ts";
import { completeArgument } from "./completion.ts";
import { pinProtocolEra } from "./era-pin.ts";
import { createHandlerGuard } from "./handler-guard.ts";
import {
  LEGACY_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSION,
} from "./protocol-versions.ts";
import { shortCircuitResponseChecks } from "./response-checks.ts";
import { createSkillsExtension, SKILLS_CACHE_HINT } from "./skills-extension.ts";

/** What the HTTP route vouches for, passed to handlers as the SDK's `authInfo.extra`. */
export interface AdmittedCaller {
  principal: Principal;
  workspaceId: string;
  /** The HTTP request's `x-request-id`, which an unexpected failure is logged and answered with. */
  requestId: string;
  /** What the caller's access token granted, when an access token authenticated the request. */
  scopes?: readonly string[];
}

/**
 * How a front handler does its work: as the admitted caller, with an unexpected error logged and
 * answered by request id (handler-guard.ts).
 */
export type Serve = <T>(ctx: ServerContext, work: (caller: AdmittedCaller) => Promise<T>) => Promise<T>;

export interface FrontDeps {
  router: Router;
  registries: IdleCache<SourceRegistry>;
  dispatch: ToolDispatch;
  guidance: WorkspaceGuidance;
  log: Logger;
}

/** The two long-lived servers behind every `/mcp/ws_…` URL, one per protocol era (adr/0029). */
export interface FrontServers {
  legacy: McpServer;
  modern: McpServer;
}

const SERVER_INFO = { name: "atrium", version: ATRIUM_VERSION };

// listChanged is false: a stateless endpoint keeps no connection to announce a change on.
const CAPABILITIES = {
  tools: { listChanged: false },
  resources: { listChanged: false },
  prompts: { listChanged: false },
  logging: {},
  completions: {},
};

/**
 * The servers hold no workspace of their own: each request arrives with the (principal,
 * workspace) the route admitted, and the handlers reach that workspace's registry through the
 * router. A client can set neither.
 */
export function createFrontServers(deps: FrontDeps): FrontServers {
  shortCircuitResponseChecks();
  const guard = createHandlerGuard(deps.log);
  const serve: Serve = (ctx, work) => {
    const caller = admitted(ctx);
    return guard(ctx, caller.requestId, () => work(caller));
  };
  const skills = createSkillsExtension(deps.guidance, serve, deps.log);
  const legacy = new McpServer(SERVER_INFO, {
    capabilities: CAPABILITIES,
    supportedProtocolVersions: [...LEGACY_PROTOCOL_VERSIONS],
  });
  const modern = new McpServer(SERVER_INFO, {
    capabilities: CAPABILITIES,
    supportedProtocolVersions: [MODERN_PROTOCOL_VERSION],
    cacheHints: { "server/discover": SKILLS_CACHE_HINT },
  });
  pinProtocolEra(modern.server, MODERN_PROTOCOL_VERSION);
  for (const mcp of [legacy, modern]) {
    skills.attach(mcp);
    installHandlers(mcp, deps, serve, mcp === legacy);
  }
  installLegacyHandshake(legacy, deps, serve);
  installDiscover(modern, deps, serve);
  return { legacy, modern };
}

function installHandlers(
  mcp: McpServer,
  { router, registries, guidance, dispatch, log }: FrontDeps,
  serve: Serve,
  /** 2025 only: its listing wraps a non-object schema, so a result is shaped by the tool's listed one. */
  shapesByListing: boolean,
): void {
  const server = mcp.server;
  server.setRequestHandler("tools/list", (_request, ctx) =>
    serve(ctx, async ({ workspaceId, principal }) => {
      const tools = await registries.use(workspaceId, (registry) => router.listTools(registry, principal.id));
      return { tools: await guidance.annotateTools(workspaceId, principal.id, tools) };
    }),
  );

  server.setRequestHandler("tools/call", (request, ctx) =>
    serve(ctx, async ({ principal, workspaceId, requestId, scopes }) => {
      const { name } = request.params;
      const onProgress = progressRelay(request.params._meta?.progressToken, ctx);
      const caller = { principalId: principal.id, workspaceId, ...(scopes && { scopes }) };
      // The signal aborts when the client cancels the call or goes away (request-mux-transport.ts).
      const result = await dispatch.call(caller, name, request.params.arguments, {
        requestId,
        signal: ctx.mcpReq.signal,
        ...(onProgress && { onProgress }),
      });
      if (result.structuredContent === undefined) return result;
      // Structured content is shaped for the era, in 2025 by the schema the listing gave (call-result.ts).
      const tool = shapesByListing
        ? await registries.use(workspaceId, (registry) => router.findTool(registry, principal.id, name))
        : undefined;
      return callResultForEra(server, result, tool?.outputSchema, { tool: name, requestId }, log);
    }),
  );

  server.setRequestHandler("prompts/list", async () => ({ prompts: [] }));
  server.setRequestHandler("prompts/get", async (request) => {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown prompt "${request.params.name}".`);
  });

  server.setRequestHandler("completion/complete", (request, ctx) =>
    serve(ctx, async ({ workspaceId, principal }) => ({
      completion: await completeArgument(guidance, workspaceId, principal.id, request.params),
    })),
  );

  // A level set by one stateless request could only be remembered for every caller at once;
  // the request is accepted and nothing is kept. 2026-07-28 clients send a level per request.
  server.setRequestHandler("logging/setLevel", async () => ({}));
}

/** 2025 era: `initialize` answers with this caller's instructions and keeps no client state. */
function installLegacyHandshake(mcp: McpServer, { guidance }: FrontDeps, serve: Serve): void {
  mcp.server.setRequestHandler("initialize", (request, ctx) =>
    serve(ctx, async ({ workspaceId, principal }) => {
      const asked = request.params.protocolVersion;
      return {
        protocolVersion: LEGACY_PROTOCOL_VERSIONS.includes(asked) ? asked : LEGACY_PROTOCOL_VERSION,
        capabilities: mcp.server.getCapabilities(),
        serverInfo: SERVER_INFO,
        instructions: await guidance.instructions(workspaceId, principal.id),
      };
    }),
  );
}

/** 2026-07-28: `server/discover` gives what `initialize` gives older clients, cached privately. */
function installDiscover(mcp: McpServer, { guidance }: FrontDeps, serve: Serve): void {
  mcp.server.setRequestHandler("server/discover", (_request, ctx) =>
    serve(ctx, async ({ workspaceId, principal }) => ({
      supportedVersions: [MODERN_PROTOCOL_VERSION],
      capabilities: mcp.server.getCapabilities(),
      instructions: await guidance.instructions(workspaceId, principal.id),
    })),
  );
}

/**
 * When the client asked for progress, the source's reports go to it under the client's own token,
 * on this request's response (an SSE stream from the first report on). A report that can no
 * longer be sent (the stop closed the endpoint while a tool ran on) is dropped: the call's own
 * answer says how it ended, and the rejection, handled by nobody, would end the process
 * (test/integration/mcp-front-door-drain.test.ts "a progress report a tool makes after").
 */
function progressRelay(token: string | number | undefined, ctx: ServerContext): ProgressListener | undefined {
  if (token === undefined) return undefined;
  return (report) => {
    ctx.mcpReq
      .notify({ method: "notifications/progress", params: { progressToken: token, ...report } })
      .catch(() => undefined);
  };
}

function admitted(ctx: ServerContext): AdmittedCaller {
  const caller = ctx.http?.authInfo?.extra?.atrium as AdmittedCaller | undefined;
  // Unreachable through the HTTP route, which always admits first; refuse rather than guess.
  if (!caller)
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      "Request reached the MCP server without admission.",
    );
  return caller;
}
