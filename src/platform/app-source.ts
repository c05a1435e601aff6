import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import type { Caller } from "../sources/caller-meta.ts";
import { McpSource } from "../sources/mcp-source.ts";
import type { Source, SourceCall } from "../sources/source.ts";
import type { AppTools, ToolCall } from "./app-tools.ts";
import { untilAborted } from "./until-aborted.ts";

/**
 * A platform app as a source: listed through its SDK server on the in-memory pair (once, then
 * cached like any source's list), called directly through its tool table (adr/0058). One per
 * app for the whole instance, lent to every workspace's registry (adr/0057).
 */
export class AppSource implements Source {
  private readonly listing: McpSource;

  constructor(
    readonly name: string,
    private readonly tools: AppTools,
  ) {
    this.listing = new McpSource(name, { kind: "in-memory", createServer: () => tools.server });
  }

  listTools(): Promise<Tool[]> {
    return this.listing.listTools();
  }

  /**
   * An aborted `signal` ends the wait at once; the tool is told through its own `call.signal`, and
   * `onCalled` is given its work, which may run on.
   */
  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    { onProgress, signal, onCalled }: SourceCall = {},
  ): Promise<CallToolResult> {
    const call: ToolCall = {};
    if (onProgress) call.progress = async (report) => onProgress(report);
    if (!signal) return this.tools.call(tool, args, caller, call);
    if (signal.aborted) return Promise.reject(signal.reason);
    call.signal = signal;
    const work = this.tools.call(tool, args, caller, call);
    onCalled?.(work);
    return untilAborted(work, signal);
  }

  close(): Promise<void> {
    return this.listing.close();
  }
}
