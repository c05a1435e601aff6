import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  MessageExtraInfo,
  TransportSendOptions,
} from "@modelcontextprotocol/server";
import { PerRequestHTTPServerTransport } from "@modelcontextprotocol/server";
import { ACCEPTED, jsonReply, type McpReply } from "./reply.ts";
import {
  isAnswer,
  type Readmitted,
  type ReplySink,
  type RequestMuxTransport,
} from "./request-mux-transport.ts";

type Classification = MessageExtraInfo["classification"] & object;

/**
 * One 2026-07-28 exchange. The request goes to the era's server through the mux; its HTTP half
 * is the SDK's PerRequestHTTPServerTransport (an SSE stream once the call reports progress, the
 * HTTP status of an error refused before dispatch), built only when the answer needs it. The hot
 * case needs nothing of it: a request's successful result while nothing has been streamed,
 * which the transport would answer exactly as this does, status 200 and the message as JSON —
 * and building the transport, its promises and its own guard parse of the message cost ≈ 13%
 * of a call (adr/0099). A notification is answered 202, as the transport answers it.
 */
export function serveModernExchange(
  message: JSONRPCRequest | JSONRPCNotification,
  classification: Classification,
  authInfo: MessageExtraInfo["authInfo"],
  mux: RequestMuxTransport,
  exchange: Readmitted,
): Promise<McpReply> {
  const extra: MessageExtraInfo = { classification, ...(authInfo && { authInfo }) };
  if (!("id" in message)) {
    mux.receive(message, extra, NO_REPLY);
    return Promise.resolve(ACCEPTED);
  }
  const reply = new LazyExchange(message, classification, authInfo, exchange);
  exchange.whenAbandoned(() => mux.abandon(reply));
  reply.dispatching = true;
  try {
    mux.receive(message, extra, reply);
  } finally {
    reply.dispatching = false;
  }
  return reply.answer;
}

/** A notification is answered by nothing; the mux never writes to its sink. */
const NO_REPLY: ReplySink = { send: () => Promise.resolve(), cancelled: () => {} };

/**
 * Where the server's messages for one request go. Until something other than a plain result
 * arrives there is no transport; the first such message opens one, and the transport decides,
 * as it does for every exchange it serves, what HTTP answer that message makes.
 */
class LazyExchange implements ReplySink {
  readonly answer: Promise<McpReply>;
  /** True while the request is handed to the server, where the SDK's pre-handler gates answer. */
  dispatching = false;
  private settle: ((reply: McpReply) => void) | undefined;
  private fail: ((error: unknown) => void) | undefined;
  private http: PerRequestHTTPServerTransport | undefined;
  private wasCancelled = false;

  constructor(
    private readonly message: JSONRPCRequest,
    private readonly classification: Classification,
    private readonly authInfo: MessageExtraInfo["authInfo"],
    private readonly exchange: Readmitted,
  ) {
    this.answer = new Promise<McpReply>((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
  }

  send(outbound: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.http) {
      // A stream's answer goes only to a caller the gate still admits (adr/0154): the change's
      // cancellation runs once its write is done, and the gate refuses them from the moment the
      // index shows it. Refused, the stream ends without it, as a cancelled one does.
      if (isAnswer(outbound) && !this.exchange.stillAdmitted()) {
        this.cancelled();
        return Promise.resolve();
      }
      return this.http.send(outbound, options);
    }
    // Answered already (or cancelled): the exchange is over.
    if (!this.settle) return Promise.resolve();
    if ("result" in outbound) {
      this.finish(jsonReply(200, outbound));
      return Promise.resolve();
    }
    return this.open(outbound, options);
  }

  // A cancelled request gets no answer: the exchange ends with nothing (202) or, once
  // streaming, its stream ends.
  cancelled(): void {
    this.wasCancelled = true;
    this.finish(ACCEPTED);
    if (this.http) void this.http.close();
  }

  /**
   * The transport serves the request as though it had received it: its copy of the dispatch
   * does not reach the server again (the server has it already) but, for a message that arrived
   * while this exchange was dispatching, sends that message from inside the transport's own
   * dispatch window — so an error refused by a pre-handler gate gets the transport's HTTP status
   * for it (a 404 for an unknown method) and any later one the status of a handler's error.
   */
  private open(first: JSONRPCMessage, options: TransportSendOptions | undefined): Promise<void> {
    const http = new PerRequestHTTPServerTransport({ classification: this.classification });
    this.http = http;
    const inWindow = this.dispatching;
    let dispatched = false;
    let sent: Promise<void> | undefined;
    http.onmessage = () => {
      dispatched = true;
      if (inWindow) sent = http.send(first, options);
    };
    // start() only marks the transport started; there is nothing to wait for.
    void http.start();
    http.handleMessage(this.message, this.authInfo ? { authInfo: this.authInfo } : undefined).then(
      (response) => this.finish({ kind: "web", response }),
      // Closed before it answered: after a cancel that is the 202 cancelled() gave; anything
      // else is a failure, answered 500 and logged by the front door.
      (error) => (this.wasCancelled ? this.finish(ACCEPTED) : this.failWith(error)),
    );
    // The transport runs its dispatch, and so the onmessage above, before handleMessage returns
    // (test/unit/http/modern-exchange.test.ts pins it): otherwise the message would be sent
    // outside the window, or to a transport not yet serving the request.
    if (!dispatched) {
      this.failWith(
        new Error("PerRequestHTTPServerTransport did not dispatch before handleMessage returned"),
      );
      return Promise.resolve();
    }
    return sent ?? http.send(first, options);
  }

  private finish(reply: McpReply): void {
    this.settle?.(reply);
    this.settle = undefined;
    this.fail = undefined;
  }

  private failWith(error: unknown): void {
    this.fail?.(error);
    this.settle = undefined;
    this.fail = undefined;
  }
}
