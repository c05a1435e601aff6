// Deciding whether a tools/call response is a success. Two flavours: a thorough parse for the single
// pre-flight call, and a cheap string test for every response under load, because the load
// generator shares the machine's two cores with the server and must not become the bottleneck.

export interface ToolResult {
  isError?: boolean;
  content?: unknown[];
  structuredContent?: Record<string, unknown>;
}

interface JsonRpcResponse<R = ToolResult> {
  result?: R;
  error?: { code?: number; message?: string };
}

/** The `result` of any JSON-RPC response, in JSON or SSE; a JSON-RPC error throws. */
export function parseJsonRpcResult(contentType: string, text: string): object {
  const message = parseJsonRpc<object>(contentType, text);
  if (message.error) throw new Error(`JSON-RPC error ${message.error.code}: ${message.error.message}`);
  const result = message.result;
  if (!result || typeof result !== "object") throw new Error(`response has no result: ${clip(text)}`);
  return result;
}

export function parseToolResult(contentType: string, text: string): ToolResult {
  const result = parseJsonRpcResult(contentType, text) as ToolResult;
  if (result.isError) throw new Error(`tool returned isError: ${clip(JSON.stringify(result.content))}`);
  return result;
}

// Streamable HTTP lets a server answer with SSE even when JSON would do; accept either.
function parseJsonRpc<R>(contentType: string, text: string): JsonRpcResponse<R> {
  if (contentType.includes("text/event-stream")) {
    const data = text
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim())
      .find((line) => line.includes('"result"') || line.includes('"error"'));
    if (!data) throw new Error(`SSE response carries no JSON-RPC response: ${clip(text)}`);
    return JSON.parse(data) as JsonRpcResponse<R>;
  }
  return JSON.parse(text) as JsonRpcResponse<R>;
}

export function looksSuccessful(body: string): boolean {
  return body.includes('"result"') && !body.includes('"isError":true') && !body.includes('"error":{');
}

export function clip(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
