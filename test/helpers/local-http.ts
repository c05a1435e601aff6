import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** What a local handler answers: a status, JSON (or nothing), and headers. */
export interface LocalAnswer {
  status: number;
  json?: unknown;
  headers?: Record<string, string>;
  /** Written after the headers as the start of a body that never ends (a server that stalls). */
  stall?: string;
}

/**
 * A throwaway HTTP server on 127.0.0.1 port 0 whose every request (with its whole body as text)
 * is answered by `answer`: a stand-in authorization or resource server for a unit test.
 */
export async function serveLocally(
  answer: (request: IncomingMessage, body: string) => LocalAnswer,
): Promise<{ base: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      const { status, json, headers = {}, stall } = answer(request, body);
      if (stall !== undefined) response.writeHead(status, headers).write(stall);
      else if (json === undefined) response.writeHead(status, headers).end();
      else
        response
          .writeHead(status, { "content-type": "application/json", ...headers })
          .end(JSON.stringify(json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Where a local stand-in authorization server at `base` says its endpoints are, with PKCE S256,
 * for a test to discover or to hand to the token functions directly as a target.
 */
export function localTarget(base: string, extra: Record<string, unknown> = {}) {
  const metadata = {
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    ...extra,
  };
  return {
    serverUrl: "https://mcp.example/mcp",
    resource: "https://mcp.example/mcp",
    issuer: base,
    metadata,
  };
}
