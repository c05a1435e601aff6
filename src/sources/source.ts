import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import type { Caller } from "./caller-meta.ts";
import type { ProgressListener } from "./mcp-source.ts";

/** What a call carries besides its tool, arguments and caller. */
export interface SourceCall {
  onProgress?: ProgressListener;
  /** The HTTP request's (or task run's) id, for a source that records its calls (a connection's audit). */
  requestId?: string;
  /** Cancels the call: the source stops waiting and tells its server (`notifications/cancelled`). */
  signal?: AbortSignal;
  /**
   * How long a remote server may take to answer before the call fails as timed out; without it,
   * the MCP client library's own default (60 s). A task run sets it to its whole timeout.
   */
  timeoutMs?: number;
  /**
   * Told the tool's own work once it is called, by a source that stops waiting at `signal` while
   * that work may run on (a platform tool that ignores its signal): a task run holds its slot until
   * it settles (ADR 0106). A source whose call settles at its abort (a remote one) does not tell.
   */
  onCalled?: (work: Promise<unknown>) => void;
}

/**
 * Anything the router can list and call tools of: a platform app (AppSource, its tools called
 * directly) or a connection, whose tools are its pinned snapshot and whose calls pass its gate.
 */
export interface Source {
  /** The `<source>` of `<source>__<tool>`. */
  readonly name: string;
  /**
   * Set on a personal connection (`my_<name>`, ADR 0042): the principal it belongs to. The
   * registry lists and finds it for that principal alone; to anyone else it does not exist.
   */
  readonly owner?: string;
  /** The source's own tool list (not namespaced). */
  listTools(): Promise<Tool[]>;
  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    call?: SourceCall,
  ): Promise<CallToolResult>;
  /**
   * `"now"` (the default): the source is out of service, and whatever it has under way with its
   * server, a connect included, ends at once. `"superseded"`: a newer source serves in its place;
   * a connect under way finishes before the client is closed, so a health loop's swap does not
   * fail a connect it raced (ADR 0109). A call in flight on the old client fails either way.
   */
  close(how?: SourceClosing): Promise<void>;
}

/** How a source is closed: see Source.close. */
export type SourceClosing = "now" | "superseded";
