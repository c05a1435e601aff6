import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import type { Caller } from "../sources/caller-meta.ts";
import { McpSource } from "../sources/mcp-source.ts";
import type { Source, SourceCall } from "../sources/source.ts";
import type { AppTools, ToolCall } from "./app-tools.ts";

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

  /** An aborted `signal` ends the wait at once; the tool is told through its own `call.signal`. */
  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    { onProgress, signal }: SourceCall = {},
  ): Promise<CallToolResult> {
    const call: ToolCall = {};
    if (onProgress) call.progress = async (report) => onProgress(report);
    if (!signal) return this.tools.call(tool, args, caller, call);
    if (signal.aborted) return Promise.reject(signal.reason);
    call.signal = signal;
    return untilAborted(this.tools.call(tool, args, caller, call), signal);
  }

  close(): Promise<void> {
    return this.listing.close();
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const listener = new AbortListener(signal, reject);
    signal.addEventListener("abort", listener);
    work.then(
      (value) => {
        signal.removeEventListener("abort", listener);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", listener);
        reject(error);
      },
    );
  });
}

/**
 * Rejects with the signal's reason when it aborts. A class rather than a named closure: the
 * sources run through tsx, which names each named closure with a property write as it is made,
 * here on every platform call.
 */
class AbortListener {
  constructor(
    private readonly signal: AbortSignal,
    private readonly reject: (reason: unknown) => void,
  ) {}

  handleEvent(): void {
    this.reject(this.signal.reason);
  }
}
