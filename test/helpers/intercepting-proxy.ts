import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as WebStream } from "node:stream/web";

/** What the proxy answers in the server's place. */
export interface ProxyAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** A request as the proxy received it: its JSON-RPC message (if its body is one), headers and path. */
export interface ProxiedRequest {
  message: { id?: unknown; method?: unknown; params?: unknown } | undefined;
  headers: IncomingHttpHeaders;
  /** The path and query it asked for. */
  path: string;
}

/**
 * Decides, per request, whether the proxy answers it itself: by the JSON-RPC `method` of its body
 * (`undefined` for anything else), or by the whole request (to echo what it was sent). It may
 * wait (to hold a request where a test wants it), and answers `undefined` to let the request
 * through to the server.
 */
export type Interception = (
  method: string | undefined,
  request: ProxiedRequest,
) => ProxyAnswer | undefined | Promise<ProxyAnswer | undefined>;

export interface InterceptingProxy {
  /** The server's URL, at the proxy's port on 127.0.0.1. */
  url: URL;
  /** From now on each request goes through `answer` first; without one, everything is forwarded. */
  intercept(answer?: Interception): void;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host", "content-length"]);

/**
 * A proxy in front of a remote MCP server (test/helpers/remote-server.ts) that a test turns, live,
 * into a server that answers what it wants and when it wants: a slow 401, a 200 that is not JSON.
 * Streams pass through as they come, and a request whose client goes away ends its upstream.
 */
export async function startInterceptingProxy(target: URL): Promise<InterceptingProxy> {
  let interception: Interception | undefined;
  const server = createServer((request, response) => {
    void handle(request, response).catch(() => response.destroy());
  });
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const message = messageOf(body);
    const method = typeof message?.method === "string" ? message.method : undefined;
    const answer = await interception?.(method, {
      message,
      headers: request.headers,
      path: request.url ?? "/",
    });
    if (answer) {
      response.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? "");
      return;
    }
    const upstream = new AbortController();
    response.once("close", () => upstream.abort());
    const headers = Object.entries(request.headers).flatMap(([name, value]) =>
      HOP_BY_HOP.has(name) || value === undefined ? [] : [[name, String(value)] as [string, string]],
    );
    const forwarded = await fetch(new URL(request.url ?? "/", target), {
      method: request.method ?? "GET",
      headers,
      ...(body.length > 0 ? { body } : {}),
      signal: upstream.signal,
    });
    const back: Record<string, string> = {};
    forwarded.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) back[name] = value;
    });
    response.writeHead(forwarded.status, back);
    if (!forwarded.body) return void response.end();
    await pipeline(Readable.fromWeb(forwarded.body as WebStream), response);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(target.href);
  url.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    intercept(answer) {
      interception = answer;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function messageOf(body: Buffer): ProxiedRequest["message"] {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as unknown;
    return parsed !== null && typeof parsed === "object" ? (parsed as ProxiedRequest["message"]) : undefined;
  } catch {
    return undefined;
  }
}
