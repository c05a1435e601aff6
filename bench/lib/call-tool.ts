import { type Era, type ToolCall, toolCallRequest } from "./tool-call.ts";
import { clip, looksSuccessful, parseToolResult, type ToolResult } from "./tool-result.ts";

// One real tools/call with full checking. Used for setup (Atrium's files__write) and as the
// pre-flight before every load, so a misconfigured target fails loudly instead of being benchmarked
// at the speed of its error path.
export async function callTool(call: ToolCall, era: Era): Promise<ToolResult> {
  const request = toolCallRequest(call, era);
  const response = await fetch(call.url, { ...request, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  const where = `${call.tool} (${era}) at ${call.url}`;
  if (!response.ok) throw new Error(`${where}: HTTP ${response.status}: ${clip(text)}`);
  let result: ToolResult;
  try {
    result = parseToolResult(response.headers.get("content-type") ?? "", text);
  } catch (error) {
    throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  // The load run checks bodies with a cheap string test; make sure that test agrees with the parse.
  if (!looksSuccessful(text))
    throw new Error(`${where}: success body fails the load-time check: ${clip(text)}`);
  return result;
}
