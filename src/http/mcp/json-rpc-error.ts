/** MCP's code for a resource that does not exist (MCP specification, "Resources: error handling"). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * The error a front-server handler throws to answer with a JSON-RPC error. The SDK sends an
 * error's `code` and `message` as they are; its own `McpError` prefixes the message with
 * "MCP error <code>: ", and the client's `McpError` adds that prefix again, so a client read
 * "MCP error -32002: MCP error -32002: Resource not found". The wire carries the message alone
 * (test/integration/mcp-params.test.ts).
 */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "JsonRpcError";
  }
}
