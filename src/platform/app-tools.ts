import {
  type CallToolResult,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
  type StandardSchemaV1,
  type StandardSchemaWithJSON,
  type ToolAnnotations,
  type ToolCallback,
} from "@modelcontextprotocol/server";
import { AtriumError } from "../errors.ts";
import { type Caller, callerFromMeta } from "../sources/caller-meta.ts";
import type { ProgressListener } from "../sources/mcp-source.ts";
import { toolError } from "../sources/router.ts";
import { unexpectedToolResult } from "../sources/tool-failure.ts";
import { ATRIUM_VERSION } from "../version.ts";

/** What a platform tool learns of its call besides who is calling and with which arguments. */
export interface ToolCall {
  /** Set when the caller asked for progress reports: each is on its way when the promise settles. */
  progress?: (report: Parameters<ProgressListener>[0]) => Promise<void>;
  /**
   * Aborted when the caller cancels (an MCP client's cancel or closed connection, a task run's
   * timeout); absent when nothing can cancel the call.
   */
  signal?: AbortSignal;
}

/** A platform tool's work: act for `caller`, in `caller.workspaceId`, never in a workspace an argument names. */
export type PlatformToolRun<A> = (caller: Caller, args: A, call: ToolCall) => Promise<CallToolResult>;

export interface PlatformToolConfig<S extends StandardSchemaWithJSON> {
  title?: string;
  description: string;
  /** `platformInput({…})`: how the tool is listed, and what its arguments are checked against. */
  inputSchema: S;
  /** `readOnlyHint` chooses the scope a call needs (`mcp:read` or `mcp:write`): set it honestly. */
  annotations: ToolAnnotations;
}

interface Registered {
  inputSchema: StandardSchemaWithJSON;
  run: PlatformToolRun<unknown>;
}

/**
 * A platform app's tools, served to every workspace (adr/0057). Each tool is held twice over
 * one definition: as an SDK server's tool, which is how the tools are listed (the SDK writes
 * their JSON Schemas) and how an MCP client connected to that server calls them; and in a table
 * the router's calls reach directly, without a second pass through the protocol (adr/0058). The
 * front server has already parsed the request and parses the result, so the direct arm keeps
 * only what the app's server would add: the arguments checked against the tool's schema.
 */
export class AppTools {
  readonly server: McpServer;
  private readonly registered = new Map<string, Registered>();

  constructor(serverName: string) {
    this.server = new McpServer({ name: serverName, version: ATRIUM_VERSION });
  }

  /**
   * Adds a tool. Whatever `work` throws is answered here, on both arms: Atrium's typed errors as
   * `isError` results the model can read; any other error is unexpected — its words (a path
   * under the data root, a stack) are not for the model — so it goes to the router to be logged
   * with the request id and answered with that id alone (sources/tool-failure.ts).
   */
  registerTool<S extends StandardSchemaWithJSON>(
    name: string,
    config: PlatformToolConfig<S>,
    work: PlatformToolRun<StandardSchemaWithJSON.InferOutput<S>>,
  ): void {
    if (this.registered.has(name)) throw new Error(`The tool "${name}" is registered twice.`);
    const run = answeringErrors(work);
    this.registered.set(name, { inputSchema: config.inputSchema, run: run as PlatformToolRun<unknown> });
    const fromProtocol = (args: unknown, ctx: ServerContext) => runFromProtocol(run, args, ctx);
    this.server.registerTool(name, config, fromProtocol as ToolCallback<S>);
  }

  /**
   * Calls a tool as `caller`, whom only the router names (from the gated request). Arguments
   * that fail the schema are answered as the SDK's server answers them, which the router
   * rewords to name the tool as the client called it.
   */
  async call(
    name: string,
    args: Record<string, unknown>,
    caller: Caller,
    call: ToolCall,
  ): Promise<CallToolResult> {
    const tool = this.registered.get(name);
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    const checked = await tool.inputSchema["~standard"].validate(args);
    if (checked.issues) {
      const problems = checked.issues.map(describeIssue).join(", ");
      return toolError(`Input validation error: Invalid arguments for tool ${name}: ${problems}`);
    }
    return await tool.run(caller, checked.value, call);
  }
}

function answeringErrors<A>(work: PlatformToolRun<A>): PlatformToolRun<A> {
  return async (caller, args, call) => {
    try {
      return await work(caller, args, call);
    } catch (error) {
      if (error instanceof AtriumError) return toolError(error.message);
      return unexpectedToolResult(error);
    }
  };
}

/** A call that came through the app's own server: the caller is in host-owned `_meta`. */
async function runFromProtocol<A>(
  run: PlatformToolRun<A>,
  args: A,
  ctx: ServerContext,
): Promise<CallToolResult> {
  let caller: Caller;
  try {
    caller = callerFromMeta(ctx.mcpReq._meta);
  } catch (error) {
    return unexpectedToolResult(error);
  }
  const token = ctx.mcpReq._meta?.progressToken;
  const call: ToolCall = { signal: ctx.mcpReq.signal };
  if (token !== undefined) {
    call.progress = (report) =>
      ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, ...report } });
  }
  return await run(caller, args, call);
}

// As the SDK's server words an argument problem (its validateStandardSchema is not exported).
function describeIssue(issue: StandardSchemaV1.Issue): string {
  if (!issue.path?.length) return issue.message;
  const path = issue.path.map((segment) => String(typeof segment === "object" ? segment.key : segment));
  return `${path.join(".")}: ${issue.message}`;
}
