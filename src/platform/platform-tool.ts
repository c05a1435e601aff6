import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AtriumError } from "../errors.ts";
import { type Caller, callerFromMeta } from "../sources/caller-meta.ts";
import { toolError } from "../sources/router.ts";

type Handler<A> = (args: A, extra: { _meta?: Record<string, unknown> }) => Promise<CallToolResult>;

/**
 * Wraps a platform app's tool: reads the caller from host-owned `_meta`, refuses a caller
 * from another workspace (defence in depth: each app server serves one workspace), and
 * turns Atrium's typed errors into `isError` results the model can read.
 */
export function platformTool<A>(
  workspaceId: string,
  run: (caller: Caller, args: A) => Promise<CallToolResult>,
): Handler<A> {
  return async (args, extra) => {
    try {
      const caller = callerFromMeta(extra._meta);
      if (caller.workspaceId !== workspaceId) return toolError("This tool belongs to another workspace.");
      return await run(caller, args);
    } catch (error) {
      if (error instanceof AtriumError) return toolError(error.message);
      throw error;
    }
  };
}
