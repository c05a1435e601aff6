/**
 * A JSON-RPC id as an answer may repeat it: a string, or an integer JSON.parse read exactly
 * (within ±(2^53 − 1)). MCP ids are strings or integers; a larger number has already been rounded
 * by the time Atrium sees it — 9007199254740993 reads as …992 — so echoing it would name another
 * request. Anything else is undefined: the error then carries `id: null`, as JSON-RPC asks when
 * the id cannot be told.
 */
export function echoableId(id: unknown): string | number | undefined {
  if (typeof id === "string") return id;
  return typeof id === "number" && Number.isSafeInteger(id) ? id : undefined;
}

export const UNUSABLE_ID =
  "Invalid Request: a request id is a string or an integer from -(2^53 - 1) to 2^53 - 1; send it as a string if it is larger";
