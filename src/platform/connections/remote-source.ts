import { type CallToolResult, SdkError, SdkErrorCode, type Tool } from "@modelcontextprotocol/client";
import type { Caller } from "../../sources/caller-meta.ts";
import type { McpSource, RemoteSkill } from "../../sources/mcp-source.ts";
import type { SourceCall, SourceClosing } from "../../sources/source.ts";
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

  /**
   * One round trip that carries the credential, in the negotiated revision's words: `ping`, or
   * from 2026-07-28 on, which has no ping (the SDK refuses to send one), a `tools/list`, which
   * every connection's server answers.
   */
  roundTrip(): Promise<void> {
    return this.told(async () => {
      try {
        await this.source.ping();
      } catch (error) {
        if (!(error instanceof SdkError && error.code === SdkErrorCode.MethodNotSupportedByProtocolVersion))
          throw error;
        await this.source.listTools();
      }
    });
  }

  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    call?: SourceCall,
  ): Promise<CallToolResult> {
    return this.told(() => this.source.callTool(tool, args, caller, call));
  }

  close(how?: SourceClosing): Promise<void> {
    return this.told(() => this.source.close(how));
  }

  /** Closes the client and lets the next call connect afresh (McpSource.reset). */
  reset(): Promise<void> {
    return this.told(() => this.source.reset());
  }

  private async told<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw retold(error, this.secrets());
    }
  }
}
