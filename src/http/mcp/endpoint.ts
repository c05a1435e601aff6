import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AdmittedCaller } from "./front-server.ts";
import { invalidParamsReply } from "./invalid-params.ts";
import { ACCEPTED_PROTOCOL_VERSIONS } from "./protocol-versions.ts";
import { RequestMuxTransport } from "./request-mux-transport.ts";

/**
 * Serves one stateless Streamable HTTP POST. A fresh SDK HTTP transport per request does
 * the HTTP half (Accept, Content-Type, body limit, JSON-RPC validation, batching, 202 for
 * notifications); the long-lived front server does the protocol half through the mux.
 */
export class McpEndpoint {
  private readonly mux = new RequestMuxTransport();

  constructor(
    private readonly server: Server,
    private readonly maxBodyBytes: number,
  ) {}

  async start(): Promise<void> {
    await this.server.connect(this.mux);
  }

  /** `body` is the request's JSON, already read by readJsonBody (the route looks at it first). */
  async handle(request: Request, caller: AdmittedCaller, body: unknown): Promise<Response> {
    const version = request.headers.get("mcp-protocol-version");
    if (version !== null && !ACCEPTED_PROTOCOL_VERSIONS.includes(version)) {
      return jsonRpcError(
        400,
        `Unsupported MCP-Protocol-Version "${version}": this server speaks ${ACCEPTED_PROTOCOL_VERSIONS.join(", ")}.`,
      );
    }
    const http = new WebStandardStreamableHTTPServerTransport({
      enableJsonResponse: true,
      maxRequestBodySize: this.maxBodyBytes,
    });
    http.onmessage = (message, extra) => this.mux.receive(message, extra, http);
    const response = await http.handleRequest(request, {
      authInfo: { token: "", clientId: "", scopes: [], extra: { atrium: caller } },
      parsedBody: body,
    });
    // The SDK refuses a request whose params are not an object as unparseable (-32700).
    return (response.status === 400 && invalidParamsReply(body)) || response;
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}

/**
 * Reads the body with `text()`, which the Node adapter serves straight from the socket,
 * instead of letting the transport pull it through a web stream (most of the per-request
 * cost in bench/run.ts). The body limit is enforced before this by http/middleware/body-limit.ts.
 * Text that is not JSON becomes a value the transport's JSON-RPC validation refuses with -32700.
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  const text = await request.text();
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

const NOT_JSON = Object.freeze({ error: "request body is not JSON" });

function jsonRpcError(status: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, { status });
}
