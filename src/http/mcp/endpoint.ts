import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AdmittedCaller } from "./front-server.ts";
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

  async handle(request: Request, caller: AdmittedCaller): Promise<Response> {
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
    return http.handleRequest(request, {
      authInfo: { token: "", clientId: "", scopes: [], extra: { atrium: caller } },
    });
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}

function jsonRpcError(status: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, { status });
}
