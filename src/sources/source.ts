import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import type { Caller } from "./caller-meta.ts";
import type { ProgressListener } from "./mcp-source.ts";

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
  /**
   * `requestId` is the HTTP request's, for a source that records its calls (a connection's audit).
   * `signal` cancels the call: the source stops waiting and tells its server (a task run's timeout).
   */
  callTool(
    tool: string,
    args: Record<string, unknown>,
    caller: Caller,
    onProgress?: ProgressListener,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}
