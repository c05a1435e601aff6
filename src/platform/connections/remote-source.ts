import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import type { Caller } from "../../sources/caller-meta.ts";
import type { McpSource, ProgressListener, RemoteSkill } from "../../sources/mcp-source.ts";
import { retold } from "./remote-failure.ts";

/**
 * A connection's server as the connections app talks to it: its McpSource, with every failure
 * retold (remote-failure.ts) before it reaches the gate, a health loop or a photograph, which
 * hand its message on to a log line, a health file, a 400 or a member.
 */
export class RemoteSource {
  constructor(
    private readonly source: McpSource,
    /** The connection's credential values now (an OAuth token set rotates underneath). */
    private readonly secrets: () => readonly string[],
  ) {}

  listTools(): Promise<Tool[]> {
    return this.told(() => this.source.listTools());
  }

  describe(): ReturnType<McpSource["describe"]> {
    return this.told(() => this.source.describe());
  }

  skills(max: number): Promise<RemoteSkill[]> {
    return this.told(() => this.source.skills(max));
  }

  ping(): Promise<void> {
    return this.told(() => this.source.ping());
  }

  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    onProgress?: ProgressListener,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<CallToolResult> {
    return this.told(() => this.source.callTool(tool, args, caller, onProgress, requestId, signal));
  }

  close(): Promise<void> {
    return this.told(() => this.source.close());
  }

  private async told<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw retold(error, this.secrets());
    }
  }
}
