import { type CallToolResult, SdkError, SdkErrorCode, type Tool } from "@modelcontextprotocol/client";
import type { Caller } from "../../sources/caller-meta.ts";
import type { McpSource, RemoteSkill } from "../../sources/mcp-source.ts";
import type { SourceCall, SourceClosing } from "../../sources/source.ts";
import { retold } from "./remote-failure.ts";
import { withoutSecretsIn } from "./without-secrets.ts";

/**
 * A connection's server as the connections app talks to it: its McpSource, with every failure
 * retold (remote-failure.ts) before it reaches the gate, a health loop or a photograph, which
 * hand its message on to a log line, a health file, a 400 or a member; and every answer a member
 * may read — a tool's result, error or not, its progress reports, its tools, instructions and skills — told without the
 * connection's credential values, for a server that echoes its request back (adr/0155).
 */
export class RemoteSource {
  /**
   * Each listing as last told, by the McpSource's listing it was told from: the gate's drift check
   * asks for the listing at every call, and telling it walks every tool.
   */
  private readonly listings = new WeakMap<Tool[], { secrets: string; tools: Tool[] }>();

  constructor(
    private readonly source: McpSource,
    /** The connection's credential values now (an OAuth token set rotates underneath). */
    private readonly secrets: () => readonly string[],
  ) {}

  /**
   * The server's tools, told the same way at the photograph and at each call's drift check, so a
   * tool whose description echoes the credential keeps its digest.
   */
  listTools(): Promise<Tool[]> {
    return this.told(async () => {
      const listed = await this.source.listTools();
      const secrets = this.secrets();
      const key = secrets.join("\0");
      const known = this.listings.get(listed);
      if (known?.secrets === key) return known.tools;
      const tools = withoutSecretsIn(listed, secrets);
      this.listings.set(listed, { secrets: key, tools });
      return tools;
    });
  }

  describe(): ReturnType<McpSource["describe"]> {
    return this.told(async () => withoutSecretsIn(await this.source.describe(), this.secrets()));
  }

  skills(max: number): Promise<RemoteSkill[]> {
    return this.told(async () => withoutSecretsIn(await this.source.skills(max), this.secrets()));
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
    // A progress report's message is the server's words too, and reaches the member as it comes.
    const onProgress = call?.onProgress;
    const told: SourceCall | undefined = onProgress
      ? { ...call, onProgress: (report) => onProgress(withoutSecretsIn(report, this.secrets())) }
      : call;
    return this.told(async () =>
      withoutSecretsIn(await this.source.callTool(tool, args, caller, told), this.secrets()),
    );
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
