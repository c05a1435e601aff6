import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  MessageExtraInfo,
  TransportSendOptions,
} from "@modelcontextprotocol/server";
import { PerRequestHTTPServerTransport } from "@modelcontextprotocol/server";
import { ACCEPTED, jsonReply, type McpReply } from "./reply.ts";
import type { Abandonable, ReplySink, RequestMuxTransport } from "./request-mux-transport.ts";

/**
 * One 2026-07-28 exchange through the SDK's PerRequestHTTPServerTransport, which does its HTTP
 * half: 202 for a notification, an SSE stream once the call reports progress, the HTTP status of
 * an error refused before dispatch. One case is answered here instead, because it is the hot one
 * and the transport would build a web `Response` for it (and the front door would then have to
 * take it apart again, adr/0052): a request's successful result while nothing has been streamed.
 * For that case the transport answers exactly this, status 200 and the message as JSON; every
 * other message, errors included, goes to the transport unchanged.
 */
export async function serveModernExchange(
  message: JSONRPCRequest | JSONRPCNotification,
  classification: MessageExtraInfo["classification"] & object,
  authInfo: MessageExtraInfo["authInfo"],
  mux: RequestMuxTransport,
  exchange: Abandonable,
): Promise<McpReply> {
  const http = new PerRequestHTTPServerTransport({ classification });
  let settle: ((reply: McpReply) => void) | undefined;
  const direct = new Promise<McpReply>((resolve) => {
    settle = resolve;
  });
  let streaming = false;
  let answered = false;
  const sink: ReplySink = {
    send(outbound: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
      // The exchange is over once answered directly. The transport is not closed: closing it
      // rejects the response it still holds with an error whose stack trace cost ≈ 2% of a call;
      // it holds no timer, listener or stream in this state, so it is simply dropped.
      if (answered) return Promise.resolve();
      if (!streaming && "result" in outbound && settle) {
        settle(jsonReply(200, outbound));
        settle = undefined;
        answered = true;
        return Promise.resolve();
      }
      if (!("result" in outbound || "error" in outbound)) streaming = true;
      return http.send(outbound, options);
    },
    // A cancelled request gets no answer: the exchange ends with nothing (202) or, once
    // streaming, its stream ends.
    cancelled(): void {
      if (answered) return;
      answered = true;
      settle?.(ACCEPTED);
      settle = undefined;
      void http.close();
    },
  };
  http.onmessage = (inbound, extra) => mux.receive(inbound, extra, sink);
  await http.start();
  if ("id" in message) exchange.whenAbandoned(() => mux.abandon(sink));
  // Without the request: the transport would read its abort signal, which builds a web
  // AbortController per call (a notable share of the call's CPU), only to close itself when the
  // client goes; the front door says so instead (whenAbandoned), and the mux cancels the call.
  const viaTransport = http
    .handleMessage(message, authInfo ? { authInfo } : undefined)
    .then((response): McpReply => ({ kind: "web", response }));
  // A direct answer leaves this promise pending for good; a failure of it has no one to tell.
  viaTransport.catch(() => {});
  return Promise.race([direct, viaTransport]);
}
