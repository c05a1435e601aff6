import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import type { FetchLike } from "@modelcontextprotocol/client";
import type { Logger } from "../log.ts";
import { checkAddress, ForbiddenAddress, guardedLookup } from "../oauth/ssrf-guard.ts";

export interface OutboundLimits {
  /** Lets a server live at a loopback, private or link-local address, over http (local development). */
  allowPrivate: boolean;
  /** How long the whole answer may take, from the request to its body's last byte; then its socket is cut. */
  timeoutMs: number;
  /**
   * Lets an answer that is an event stream (`text/event-stream`) stay open once it has begun:
   * MCP traffic, where a stream carries a long call's progress or a listen subscription and the
   * SDK bounds each request itself. Without it every answer is held to `timeoutMs` whole.
   */
  eventStreams?: boolean;
  /** The most bytes one response body may carry; past it the body errors. */
  maxResponseBytes: number;
  /** Told, at `warn`, the address a refused host resolved to: the refusal itself never names it. */
  log?: Pick<Logger, "warn">;
}

/** The statuses a fetch would follow, given a `location` (the Fetch standard's redirect statuses). */
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/**
 * A failure the guarded fetch tells in its own words (a refused address, a deadline, a cap): no
 * byte of its message came from the server, so a connection's failures may repeat it
 * (platform/connections/remote-failure.ts).
 */
export class OutboundFailure extends Error {}

/** A redirect the server answered, which is never followed: with the credential it would carry. */
export class RedirectRefused extends OutboundFailure {
  constructor(
    origin: string,
    readonly status: number,
  ) {
    super(
      `${origin} answered HTTP ${status}, a redirect, which Atrium does not follow; if the server moved, use the URL it moved to.`,
    );
    this.name = "RedirectRefused";
  }
}

/**
 * The one way Atrium reaches a remote MCP server: https only (http only where private
 * addresses are allowed), every resolved address checked by the SSRF guard before a socket
 * opens, a redirect answered as a failure (RedirectRefused), a deadline for the whole answer and
 * a cap on its size. A redirect fails rather than being handed back: the MCP client library and
 * its OAuth helpers follow one themselves when it stays within the origin, credential and all
 * (test/integration/connections-hostile-server.test.ts "redirect").
 * A deadline on the headers alone let a server send `200 {"access_token":` and stall: the
 * token refresh awaiting its body held the connection's lease until restart
 * (test/unit/sources/guarded-fetch.test.ts).
 */
export function guardedFetch(limits: OutboundLimits): FetchLike {
  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      if (url.protocol !== "https:" && !(url.protocol === "http:" && limits.allowPrivate)) {
        reject(
          new OutboundFailure(`${url.origin} is not https; a remote MCP server is reached over https only.`),
        );
        return;
      }
      const host = url.hostname.replace(/^\[|\]$/g, "");
      try {
        if (isIP(host)) checkAddress(host, host, limits.allowPrivate);
      } catch (error) {
        reject(refusal(error, limits.log));
        return;
      }
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(url, {
        method: init.method ?? "GET",
        headers: Object.fromEntries(new Headers(init.headers).entries()),
        lookup: guardedLookup(limits.allowPrivate),
      });
      let res: IncomingMessage | undefined;
      // Destroying the response, once there is one, hands this error to its body's reader.
      const timer = setTimeout(() => {
        const late = new OutboundFailure(`${url.origin} did not answer within ${limits.timeoutMs} ms.`);
        if (res) res.destroy(late);
        else req.destroy(late);
      }, limits.timeoutMs);
      const signal = init.signal;
      const abort = () => req.destroy(signal?.reason ?? new OutboundFailure("aborted"));
      if (signal?.aborted) abort();
      // The SDK's 2025 transport passes one signal for the client's whole life: a listener left
      // on it kept every request, body and all, until the client closed (test/unit/sources/
      // guarded-fetch.test.ts "leaves no listener").
      signal?.addEventListener("abort", abort, { once: true });
      req.once("close", () => signal?.removeEventListener("abort", abort));
      req.once("error", (error) => {
        clearTimeout(timer);
        reject(refusal(error, limits.log));
      });
      req.once("response", (answer) => {
        res = answer;
        const status = answer.statusCode ?? 0;
        if (REDIRECT_STATUSES.has(status) && answer.headers.location !== undefined) {
          clearTimeout(timer);
          answer.destroy();
          reject(new RedirectRefused(url.origin, status));
          return;
        }
        const streams =
          limits.eventStreams && /^text\/event-stream\b/i.test(answer.headers["content-type"] ?? "");
        if (streams) clearTimeout(timer);
        else answer.once("close", () => clearTimeout(timer));
        resolve(toResponse(answer, limits.maxResponseBytes, init.method));
      });
      const body = init.body;
      if (body === undefined || body === null) req.end();
      else if (typeof body === "string" || body instanceof Uint8Array) req.end(body);
      else {
        req.destroy();
        reject(new OutboundFailure("guardedFetch sends only string or byte bodies."));
      }
    });
}

/**
 * What a request the SSRF guard refused fails with: the host, and what to do, for whoever chose
 * the URL; the address it resolved to, and its kind, for the operator's log alone.
 */
function refusal(error: unknown, log: OutboundLimits["log"]): unknown {
  if (!(error instanceof ForbiddenAddress)) return error;
  const cause = error.cause as NodeJS.ErrnoException | undefined;
  log?.warn(
    {
      host: error.host,
      address: error.address,
      kind: error.kind,
      ...(cause ? { cause: cause.code ?? cause.message } : {}),
    },
    error.kind === "unresolved"
      ? "refused an outbound request: the host's name did not resolve"
      : "refused an outbound request: the host is not at a public internet address",
  );
  return new OutboundFailure(
    `Refused: ${error.message}; use the server's public https URL, or an operator allows private addresses (connections.allowPrivateAddresses).`,
  );
}

function toResponse(res: IncomingMessage, maxBytes: number, method = "GET"): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = res.statusCode ?? 502;
  const bodiless = method === "HEAD" || status === 204 || status === 304;
  if (bodiless) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? "", headers });
  }
  const body = cappedBody(res, maxBytes);
  return new Response(body, { status, statusText: res.statusMessage ?? "", headers });
}

/**
 * The response's bytes as a web stream, paused while the reader is behind, ended with an error
 * past `maxBytes`, and torn down when the reader cancels (an event stream the client closes):
 * nothing is enqueued after that, which is what Node's own `Readable.toWeb` gets wrong.
 */
function cappedBody(res: IncomingMessage, maxBytes: number): ReadableStream<Uint8Array> {
  let seen = 0;
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const finish = (error?: Error) => {
        if (done) return;
        done = true;
        if (error) controller.error(error);
        else controller.close();
      };
      res.on("data", (chunk: Buffer) => {
        if (done) return;
        seen += chunk.byteLength;
        if (seen > maxBytes) {
          finish(new OutboundFailure(`The server's answer passed ${maxBytes} bytes; it was cut off.`));
          res.destroy();
          return;
        }
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.once("end", () => finish());
      res.once("error", (error) => finish(error));
      res.once("close", () => {
        if (!done) finish(new OutboundFailure("The server closed the connection mid-answer."));
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      done = true;
      res.destroy();
    },
  });
}
