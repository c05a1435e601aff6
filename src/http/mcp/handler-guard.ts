import { ProtocolError, ProtocolErrorCode, type ServerContext } from "@modelcontextprotocol/server";
import { AtriumError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { unexpectedFailureMessage } from "../../sources/tool-failure.ts";

/** Runs a front handler's work for the request `ctx` belongs to. */
export type HandlerGuard = <T>(ctx: ServerContext, requestId: string, work: () => Promise<T>) => Promise<T>;

/**
 * What every front handler runs its work in. The SDK answers whatever a handler throws with the
 * error's own message, so an unexpected error would reach the client in its raw words (an absolute
 * path under the data root). Here it is logged once, stack included, with the request id, and the
 * client gets JSON-RPC -32603 naming that id alone (test/integration/unexpected-errors.test.ts).
 * A protocol error that is the client's fault (invalid params, an unknown resource) and Atrium's
 * typed errors are written for the client and pass unchanged.
 */
export function createHandlerGuard(log: Logger): HandlerGuard {
  return async (ctx, requestId, work) => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof AtriumError) throw error;
      if (error instanceof ProtocolError && error.code !== ProtocolErrorCode.InternalError) throw error;
      const method = ctx.mcpReq.method;
      log.error({ requestId, method, err: error }, "MCP request failed unexpectedly");
      throw new ProtocolError(ProtocolErrorCode.InternalError, unexpectedFailureMessage(method, requestId));
    }
  };
}
