import { type CallToolResult, ProtocolError, type Tool } from "@modelcontextprotocol/client";
import type { Tool as FrontTool } from "@modelcontextprotocol/server";
import type { Logger } from "../log.ts";
import { refusedForStorage } from "../storage/storage-full.ts";
import type { Caller } from "./caller-meta.ts";
import { ComposedLists, NamespacedLists } from "./composed-lists.ts";
import { SourceRetired } from "./mcp-source.ts";
import type { SourceRegistry } from "./registry.ts";
import type { SourceCall } from "./source.ts";
import { unexpectedErrorOf, unexpectedFailureMessage, withoutSdkPrefix } from "./tool-failure.ts";
import { splitToolName } from "./tool-names.ts";

/** What a call carries besides its tool and arguments. */
export interface CallContext extends SourceCall {
  /** The HTTP request's `x-request-id`: an unexpected failure is logged and answered with it. */
  requestId: string;
}

/**
 * The one router. MCP and REST both call it; neither decides on its own which source
 * answers a tool. The source is looked up in the caller's workspace registry only, so a
 * name can never reach another workspace's sources.
 */
export class Router {
  private readonly composed = new ComposedLists();
  private readonly namespaced = new NamespacedLists();

  constructor(private readonly log: Logger) {}

  /**
   * The tools `principalId` sees here: every shared source's, and their own personal sources'.
   * The same array while the sources and each source's own (cached) list are the same objects
   * (composed-lists.ts): do not change it.
   */
  async listTools(registry: SourceRegistry, principalId: string): Promise<FrontTool[]> {
    const sources = registry.visibleTo(principalId);
    const lists = await Promise.all(
      sources.map(async (source) => {
        try {
          return await source.listTools();
        } catch (error) {
          // One unreachable source must not hide the others' tools.
          this.log.warn({ source: source.name, err: error }, "source did not list its tools");
          return undefined;
        }
      }),
    );
    return this.composed.of(registry, principalId, sources, lists, () =>
      sources.flatMap((source, i) => this.namespaced.of(source.name, lists[i])),
    );
  }

  /**
   * The tool as its source lists it, or `undefined` when no source of this workspace that
   * `principalId` can reach has it (another member's personal source is never reached).
   */
  async findTool(
    registry: SourceRegistry,
    principalId: string,
    name: string,
  ): Promise<FrontTool | undefined> {
    const parts = splitToolName(name);
    const source = parts ? registry.get(parts.source, principalId) : undefined;
    if (!parts || !source) return undefined;
    try {
      const tool = (await source.listTools()).find((listed) => listed.name === parts.tool);
      return tool && toFrontTool(tool);
    } catch {
      return undefined;
    }
  }

  callTool(
    registry: SourceRegistry,
    caller: Caller,
    name: string,
    args: Record<string, unknown> | undefined,
    context: CallContext,
  ): Promise<CallToolResult> {
    return this.call(registry, caller, name, args, context, false);
  }

  private async call(
    registry: SourceRegistry,
    caller: Caller,
    name: string,
    args: Record<string, unknown> | undefined,
    context: CallContext,
    /** Whether this is the call again after its first source was closed under it. */
    again: boolean,
  ): Promise<CallToolResult> {
    // A platform app's one server acts on the caller's workspace (adr/0057): a caller of one
    // workspace must never be handed to another's registry, whoever the code calling here is.
    if (caller.workspaceId !== registry.workspaceId) {
      const mismatch = `a caller of ${caller.workspaceId} reached the registry of ${registry.workspaceId}`;
      return this.failedUnexpectedly(name, context.requestId, new Error(mismatch));
    }
    const parts = splitToolName(name);
    // Looked up as the caller: another member's personal source answers exactly as one that
    // does not exist (test/integration/personal-connections.test.ts "invisible").
    const source = parts ? registry.get(parts.source, caller.principalId) : undefined;
    if (!parts || !source) return unknownTool(name);
    try {
      // Checked against the source's cached list so the answer names the tool as the client
      // called it, whichever kind of source this is.
      if (!(await source.listTools()).some((tool) => tool.name === parts.tool)) return unknownTool(name);
      const result = await source.callTool(parts.tool, args ?? {}, caller, context);
      // A platform app hands its unexpected errors over in host-owned _meta (tool-failure.ts).
      const unexpected = unexpectedErrorOf(result);
      if (unexpected) return this.failedUnexpectedly(name, context.requestId, unexpected);
      return result.isError ? withCalledName(result, name) : result;
    } catch (error) {
      // The source was closed for good after this call took it (a connection's client swapped, or
      // taken out of service) and nothing was sent: the call goes, once, to whatever serves the
      // name now (router.test.ts "a source closed under a call").
      if (error instanceof SourceRetired) {
        if (!again) return this.call(registry, caller, name, args, context, true);
        return toolError(`Tool "${name}" was replaced twice while it was called: call it again.`);
      }
      // A protocol error from the source (unknown tool, invalid arguments) is its server's words,
      // for the model to read; anything else (a transport that broke, a server that would not
      // start) is Atrium's own failure, whose words are for the log only.
      if (error instanceof ProtocolError)
        return toolError(`Tool "${name}" failed: ${withoutSdkPrefix(error.message)}`);
      // The caller cancelled (a task run's timeout or cancel): nothing failed here.
      if (context.signal?.aborted) return toolError(`Tool "${name}" was cancelled.`);
      return this.failedUnexpectedly(name, context.requestId, error);
    }
  }

  /**
   * Logs an unexpected failure once, stack included, and answers with its request id only. `err` is
   * what was thrown, or the error a platform app handed over. A write refused by a full disk is not
   * unexpected: the result says so and what to do, as REST's 507 does (storage-full.ts).
   */
  private failedUnexpectedly(name: string, requestId: string, err: unknown): CallToolResult {
    const full = refusedForStorage(err, this.log, { requestId, tool: name });
    if (full) return toolError(full.message);
    this.log.error({ requestId, tool: name, err }, "tool failed unexpectedly");
    return toolError(unexpectedFailureMessage(`Tool "${name}"`, requestId));
  }
}

// Sources list tools as the SDK's client types them, the front answers as its server types them:
// the JSON is the same, only the typing differs (the client declares each input property's
// schema an `object`, the server any JSON value).
function toFrontTool(tool: Tool): FrontTool {
  return tool as FrontTool;
}

// The SDK's McpServer answers arguments that fail a tool's input schema with an isError result
// that reads "Input validation error: Invalid arguments for tool <own name>: …" (a v1 server,
// such as a remote one, puts "MCP error -32602: " in front): protocol wording inside a tool
// result, naming the tool as its source knows it rather than as the client called it
// (test/integration/mcp-params.test.ts "tool arguments").
const SDK_INPUT_ERROR = /^(?:MCP error -32602: )?Input validation error: Invalid arguments for tool [^:]*: /;

function withCalledName(result: CallToolResult, name: string): CallToolResult {
  const [first, ...rest] = result.content;
  if (first?.type !== "text" || !SDK_INPUT_ERROR.test(first.text)) return result;
  const text = first.text.replace(SDK_INPUT_ERROR, `Invalid arguments for ${name}: `);
  return { ...result, content: [{ ...first, text }, ...rest] };
}

function unknownTool(name: string): CallToolResult {
  return toolError(`Unknown tool "${name}": list the tools of this workspace and use a name from that list.`);
}

export function toolError(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}
