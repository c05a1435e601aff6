import {
  isInitializeRequest,
  isJSONRPCRequest,
  type JSONRPCMessage,
  type MessageExtraInfo,
  parseJSONRPCMessage,
  type RequestId,
} from "@modelcontextprotocol/server";
import { ACCEPTED, jsonReply, type McpReply } from "./reply.ts";
import type { Abandonable, ReplySink, RequestMuxTransport } from "./request-mux-transport.ts";

/** The SDK transport's cap on a batch (WebStandardStreamableHTTPServerTransport). */
const MAX_BATCH_SIZE = 100;

/**
 * The SDK transport's answer to a batch over its cap, given before anything looks at the batch's
 * messages: the classifier parses each one, and a batch of 100,000 held the event loop half a
 * second before this answer (endpoint.ts asks first, in either era).
 */
export function refuseOversizedBatch(body: unknown): McpReply | undefined {
  if (!Array.isArray(body) || body.length <= MAX_BATCH_SIZE) return undefined;
  return transportError(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
}

/**
 * The HTTP half of one stateless 2025-era POST answered with JSON, without web objects: what
 * the SDK's WebStandardStreamableHTTPServerTransport does for a stateless server with
 * `enableJsonResponse`, check for check and message for message (its Accept 406, Content-Type 415
 * and batch size are the endpoint's, for both eras: media-types.ts, refuseOversizedBatch; each message
 * parsed by the SDK's schema, initialize only alone, notifications only → 202, every
 * request's answer collected into one JSON body), and one check it lacks: a
 * batch that repeats a request id is refused. Building the SDK transport
 * instead costs a web `Request`, a `Response`, a stream mapping and the SDK's type guards on
 * every message (adr/0052). A call that streams progress still goes through the SDK's transport
 * (endpoint.ts). The protocol itself stays the SDK server's, reached through the mux.
 */
export function serveLegacyJson(
  body: unknown,
  authInfo: MessageExtraInfo["authInfo"],
  mux: RequestMuxTransport,
  exchange: Abandonable,
): McpReply | Promise<McpReply> {
  let messages: JSONRPCMessage[];
  try {
    messages = Array.isArray(body) ? body.map(parseJSONRPCMessage) : [parseJSONRPCMessage(body)];
  } catch {
    return transportError(400, -32700, "Parse error: Invalid JSON-RPC message");
  }
  // The SDK's guards are zod parses, costly when they fail: each is asked only of a message that
  // has the one field its schema requires a literal of (a method named "initialize"; an id and a
  // method), so every answer is the guard's own.
  if (
    messages.length > 1 &&
    messages.some((m) => "method" in m && m.method === "initialize" && isInitializeRequest(m))
  ) {
    // The SDK transport says "Only one initialization request is allowed", which misreads a batch
    // of one initialize and a ping: the rule is that initialize goes alone.
    return transportError(
      400,
      -32600,
      "Invalid Request: initialize must be sent alone, not in a batch; send it as its own POST, then the other messages",
    );
  }
  const extra = { authInfo };
  const requests = messages.filter((m) => "id" in m && "method" in m && isJSONRPCRequest(m));
  const repeated = repeatedId(requests.map((m) => (m as { id: RequestId }).id));
  if (repeated !== undefined) {
    // Answers are told apart only by id: two requests sharing one would get one answer between them.
    return transportError(
      400,
      -32600,
      `Invalid Request: the batch repeats request id ${JSON.stringify(repeated)}; give each request its own id`,
    );
  }
  if (requests.length === 0) {
    for (const message of messages) mux.receive(message, extra, NOTHING_TO_ANSWER);
    return ACCEPTED;
  }
  return new Promise((resolve) => {
    const answers = new JsonExchange(
      requests.map((m) => (m as { id: RequestId }).id),
      Array.isArray(body),
      resolve,
    );
    exchange.whenAbandoned(() => mux.abandon(answers));
    for (const message of messages) mux.receive(message, extra, answers);
  });
}

/** The sink of a POST of notifications and responses only, which has no request to answer. */
const NOTHING_TO_ANSWER: ReplySink = { send: async () => {}, cancelled: () => {} };

/**
 * Collects the answers to one POST's requests; resolves once every one has its answer or was
 * cancelled. A batch is answered with an array, even of one (JSON-RPC 2.0); a single request with
 * its answer alone; a POST whose every request was cancelled with nothing (202).
 */
class JsonExchange implements ReplySink {
  private ids: RequestId[];
  private readonly answers = new Map<RequestId, JSONRPCMessage>();

  constructor(
    ids: RequestId[],
    private readonly batch: boolean,
    private readonly resolve: (reply: McpReply) => void,
  ) {
    this.ids = ids;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // A notification during a request (progress, a log line) has no place in a JSON answer.
    if (!("id" in message) || message.id === undefined || !("result" in message || "error" in message))
      return;
    this.answers.set(message.id, message);
    this.resolveOnceAnswered();
  }

  cancelled(id: RequestId): void {
    this.ids = this.ids.filter((other) => other !== id);
    this.resolveOnceAnswered();
  }

  private resolveOnceAnswered(): void {
    if (this.answers.size < this.ids.length || !this.ids.every((id) => this.answers.has(id))) return;
    const answers = this.ids.map((id) => this.answers.get(id));
    this.resolve(answers.length === 0 ? ACCEPTED : jsonReply(200, this.batch ? answers : answers[0]));
  }
}

function repeatedId(ids: RequestId[]): RequestId | undefined {
  const seen = new Set<RequestId>();
  for (const id of ids) {
    if (seen.has(id)) return id;
    seen.add(id);
  }
  return undefined;
}

function transportError(status: number, code: number, message: string): McpReply {
  return jsonReply(status, { jsonrpc: "2.0", error: { code, message }, id: null });
}
