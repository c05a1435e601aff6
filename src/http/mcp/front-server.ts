import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../../identity/principal.ts";
import type { WorkspaceGuidance } from "../../platform/skills/guidance.ts";
import type { Caller } from "../../sources/caller-meta.ts";
import type { IdleCache } from "../../sources/idle-cache.ts";
import type { SourceRegistry } from "../../sources/registry.ts";
import type { Router } from "../../sources/router.ts";
import { ATRIUM_VERSION } from "../../version.ts";
import { JsonRpcError, RESOURCE_NOT_FOUND } from "./json-rpc-error.ts";
import { ACCEPTED_PROTOCOL_VERSIONS, SERVED_PROTOCOL_VERSION } from "./protocol-versions.ts";

/** What the HTTP route vouches for, passed to handlers as the SDK's `authInfo.extra`. */
export interface AdmittedCaller {
  principal: Principal;
  workspaceId: string;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * The one long-lived SDK server behind every `/mcp/ws_…` URL. It holds no workspace of its
 * own: each request arrives with the (principal, workspace) the route admitted, and the
 * handlers reach that workspace's registry through the router. A client can set neither.
 */
export function createFrontServer(
  router: Router,
  registries: IdleCache<SourceRegistry>,
  guidance: WorkspaceGuidance,
): Server {
  const capabilities = { tools: {}, resources: {}, prompts: {}, logging: {} };
  const server = new Server({ name: "atrium", version: ATRIUM_VERSION }, { capabilities });

  // The instructions are the workspace's skills as resolved for this caller.
  server.setRequestHandler(InitializeRequestSchema, async (request, extra) => ({
    protocolVersion: ACCEPTED_PROTOCOL_VERSIONS.includes(request.params.protocolVersion)
      ? request.params.protocolVersion
      : SERVED_PROTOCOL_VERSION,
    capabilities,
    serverInfo: { name: "atrium", version: ATRIUM_VERSION },
    instructions: await withCaller(extra, (ws, who) => guidance.instructions(ws, who)),
  }));

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const { workspaceId, principal } = admitted(extra);
    const tools = await registries.use(workspaceId, (registry) => router.listTools(registry));
    return { tools: await guidance.annotateTools(workspaceId, principal.id, tools) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { principal, workspaceId } = admitted(extra);
    const caller: Caller = { principalId: principal.id, workspaceId };
    return registries.use(workspaceId, (registry) =>
      router.callTool(registry, caller, request.params.name, request.params.arguments),
    );
  });

  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => ({
    resources: await withCaller(extra, (ws, who) => guidance.listResources(ws, who)),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [] }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const uri = request.params.uri;
    const contents = await withCaller(extra, (ws, who) => guidance.readResource(ws, who, uri));
    if (!contents) throw new JsonRpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`);
    return { contents: [contents] };
  });
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [] }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    throw new JsonRpcError(ErrorCode.InvalidParams, `Unknown prompt "${request.params.name}".`);
  });

  return server;
}

function withCaller<T>(
  extra: Extra,
  work: (workspaceId: string, principalId: string) => Promise<T>,
): Promise<T> {
  const caller = admitted(extra);
  return work(caller.workspaceId, caller.principal.id);
}

function admitted(extra: Extra): AdmittedCaller {
  const caller = extra.authInfo?.extra?.atrium as AdmittedCaller | undefined;
  // Unreachable through the HTTP route, which always admits first; refuse rather than guess.
  if (!caller)
    throw new JsonRpcError(ErrorCode.InternalError, "Request reached the MCP server without admission.");
  return caller;
}
