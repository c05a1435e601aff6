import type { EndedAccess } from "../sources/calls-in-flight.ts";
import type { RouteDeps } from "./context.ts";

/**
 * Cancels every call in flight of the callers whose access a change just ended (adr/0154): the
 * MCP endpoint's, in both eras, and those made outside it through the dispatch — REST's
 * `tools/call`, a task run's. Each change's `writeThenEnd` runs it with what else ends.
 */
export function cancelCalls(deps: Pick<RouteDeps, "calls" | "dispatch">, ended: EndedAccess): void {
  deps.calls.cancelCalls(ended);
  deps.dispatch.cancelCalls(ended);
}
