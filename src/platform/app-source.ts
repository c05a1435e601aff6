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

/**
 * The call's outcome, or the signal's reason once it aborts. Most platform calls end within the
 * event-loop turn they start in, and an abort listener on the SDK's per-request signal was ≈ 9%
 * of a `files__info` call's CPU (adr/0097): so the wait listens only once the call outlives its
 * turn, and an abort before then is seen when it starts listening or when the call ends —
 * whichever comes first, as a listener added at once would have seen it.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const wait = new AbortWait(signal, reject);
    work.then(
      (value) => {
        if (wait.settle()) resolve(value);
      },
      (error: unknown) => {
        if (wait.settle()) reject(error);
      },
    );
    setImmediate(listenIfUnsettled, wait);
  });
}

function listenIfUnsettled(wait: AbortWait): void {
  wait.listen();
}

/**
 * Rejects with the signal's reason when it aborts. A class rather than a named closure: the
 * sources run through tsx, which names each named closure with a property write as it is made,
 * here on every platform call.
 */
class AbortWait {
  private settled = false;
  private listening = false;

  constructor(
    private readonly signal: AbortSignal,
    private readonly reject: (reason: unknown) => void,
  ) {}

  /** Called once the call has outlived the turn it started in. */
  listen(): void {
    if (this.settled) return;
    if (this.signal.aborted) {
      this.handleEvent();
      return;
    }
    this.listening = true;
    this.signal.addEventListener("abort", this);
  }

  /** The call ended: whether its outcome is the answer (false when the signal aborted first). */
  settle(): boolean {
    this.settled = true;
    if (this.listening) this.signal.removeEventListener("abort", this);
    if (!this.signal.aborted) return true;
    this.handleEvent();
    return false;
  }

  handleEvent(): void {
    this.reject(this.signal.reason);
  }
}
