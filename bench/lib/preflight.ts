import type { HttpRequestSpec } from "./tool-call.ts";
import { clip, looksSuccessful, parseJsonRpcResult } from "./tool-result.ts";

// The check before a target is loaded: the exact request, once, parsed in full; and the cheap test
// the load applies to every response must agree that it succeeded.
export async function preflight(url: string, request: HttpRequestSpec, what: string): Promise<object> {
  const response = await fetch(url, { ...request, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${what} at ${url}: HTTP ${response.status}: ${clip(text)}`);
  let result: object;
  try {
    result = parseJsonRpcResult(response.headers.get("content-type") ?? "", text);
  } catch (error) {
    throw new Error(`${what} at ${url}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!looksSuccessful(text))
    throw new Error(`${what} at ${url}: success body fails the load-time check: ${clip(text)}`);
  return result;
}
