import { type CallToolResult, Server, type Tool } from "@modelcontextprotocol/server";
import type { Logger } from "../../log.ts";
import { toolError } from "../../sources/router.ts";
import { unexpectedFailureMessage } from "../../sources/tool-failure.ts";

/** Which call a result answers: the tool as the client named it, and the request to log it under. */
export interface AnsweredCall {
  tool: string;
  requestId: string;
}

/**
 * `result` in the shape `server`'s era gives a tool listed with `outputSchema`. 2026-07-28 lets
 * `structuredContent` be any JSON value and an output schema have any root (SEP-2106); the 2025
 * era wants objects, so its `tools/list` wraps such a schema as `{result: …}`. The listing's wrap
 * and the call's are the SDK codec's one rule (`projectCallToolResult`), which its own McpServer
 * applies to the tools it serves and a low-level `tools/call` handler, Atrium's, applies itself.
 *
 * A result the projection reshaped is then checked as the SDK checks it once the handler returns. One its era
 * still cannot carry is Atrium's failure, not the client's: left to the SDK it would be answered
 * JSON-RPC -32602 in zod's words, outside any handler that could log it. It is logged here with the
 * request id and answered as any unexpected tool failure is (adr/0030, amended).
 */
export function callResultForEra(
  server: Server,
  result: CallToolResult,
  outputSchema: Tool["outputSchema"],
  call: AnsweredCall,
  log: Logger,
): CallToolResult {
  const projected = server.projectCallToolResult(result, outputSchema);
  // A result the projection left as it was is the one every call gave before it (most of them):
  // checking it here too would double the SDK's own check, ≈ 12 µs of a 2025 call.
  if (projected === result) return result;
  const unfit = EraCodec.unfit(server, projected);
  if (unfit === undefined) return projected;
  log.error({ ...call, unfit }, "tool result does not fit the client's protocol revision");
  return toolError(unexpectedFailureMessage(`Tool "${call.tool}"`, call.requestId));
}

/**
 * The SDK exposes only the projection on `Server`; the check it runs after a `tools/call`
 * handler is its era codec's, reached through the protected accessor its role classes use.
 * test/unit/http/mcp/call-result.test.ts fails if an SDK update moves it.
 */
class EraCodec extends Server {
  static unfit(server: Server, result: CallToolResult): string | undefined {
    const outcome = (server as EraCodec)._wireCodec().validateResult("tools/call", result);
    if (outcome.ok) return undefined;
    return outcome.reason === "invalid" ? outcome.message : outcome.reason;
  }
}
