import type { CallToolResult } from "@modelcontextprotocol/client";
import { HOST_META_PREFIX } from "./caller-meta.ts";

// An unexpected error is Atrium's fault, not the model's or the client's: its words (an absolute
// path under the data root, a stack) are for the operator's log, and the client is told only
// that it happened and which request to look up (test/integration/unexpected-errors.test.ts).

/**
 * Host-owned result `_meta` in which a platform app hands an unexpected error to the router, which
 * logs it with the request id and answers without it: the app has neither the logger nor the
 * request id, and across the in-memory pair only JSON travels, so the error goes as its fields.
 * A remote server's result never carries it: McpSource drops host-owned keys from remote results.
 */
export const UNEXPECTED_META_KEY = `${HOST_META_PREFIX}unexpected`;

/**
 * An error as it crosses the in-memory pair: what the log needs of it, and the filesystem's code,
 * by which the router knows a full disk (storage/storage-full.ts).
 */
interface LoggedError {
  type: string;
  message: string;
  stack?: string;
  code?: string;
}

/** What a client is told about an unexpected failure of `what` (a quoted tool name or a method). */
export function unexpectedFailureMessage(what: string, requestId: string): string {
  return `${what} failed unexpectedly; the server logged it as request ${requestId}.`;
}

/** A platform tool's answer to an unexpected error: an `isError` result carrying it for the router. */
export function unexpectedToolResult(error: unknown): CallToolResult {
  return {
    content: [{ type: "text", text: "The tool failed unexpectedly." }],
    isError: true,
    _meta: { [UNEXPECTED_META_KEY]: loggedError(error) },
  };
}

/**
 * The unexpected error a result carries, if any, as an Error again: pino logs an Error's message
 * and stack the same way whichever side of the in-memory pair it was thrown on.
 */
export function unexpectedErrorOf(result: CallToolResult): Error | undefined {
  const carried = result._meta?.[UNEXPECTED_META_KEY] as Partial<LoggedError> | undefined;
  if (typeof carried?.message !== "string") return undefined;
  const error = new Error(carried.message);
  if (typeof carried.type === "string") error.name = carried.type;
  if (typeof carried.stack === "string") error.stack = carried.stack;
  if (typeof carried.code === "string") (error as NodeJS.ErrnoException).code = carried.code;
  return error;
}

function loggedError(error: unknown): LoggedError {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error) };
  const { code } = error as NodeJS.ErrnoException;
  return {
    type: error.name,
    message: error.message,
    ...(error.stack !== undefined && { stack: error.stack }),
    ...(typeof code === "string" && { code }),
  };
}

// A v1 SDK writes "MCP error <code>: " in front of a protocol error's message, and again when it
// passes on an error it received, so a remote server's words can arrive as
// "MCP error -32602: MCP error -32602: Tool nope not found". The words are kept, the prefixes not.
const SDK_PREFIX = /^(?:MCP error -?\d+: )+/;

/** A protocol error's message without the SDK's "MCP error N: " prefixes. */
export function withoutSdkPrefix(message: string): string {
  return message.replace(SDK_PREFIX, "");
}
