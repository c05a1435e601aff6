import type {
  JSONRPCMessage,
  MessageExtraInfo,
  RequestId,
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/server";
import { ProtocolErrorCode } from "@modelcontextprotocol/server";
import { invalidParamsMessage } from "./invalid-params.ts";

/** Where the answer to one request goes: the per-request HTTP transport that received it. */
export interface ReplySink {
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void>;
}

interface Pending {
  originalId: RequestId;
  sink: ReplySink;
  method: string;
  params: unknown;
}

/**
 * Lets one long-lived SDK server answer many concurrent stateless HTTP requests. Each
 * request's id is replaced by a process-unique one on the way in and restored on the way
 * out, so two clients that both send `id: 1` never meet inside the protocol layer.
 * Building the server once, instead of per request, is what makes `/mcp/ws_…` fast
 * (adr/0008, adr/0029); the SDK still does all the protocol work.
 */
export class RequestMuxTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private nextId = 0;
  private readonly pending = new Map<number, Pending>();

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.pending.clear();
    this.onclose?.();
  }

  /** Hands one message from an HTTP request to the server; replies go to `sink`. */
  receive(message: JSONRPCMessage, extra: MessageExtraInfo | undefined, sink: ReplySink): void {
    if ("method" in message && "id" in message) {
      const id = ++this.nextId;
      this.pending.set(id, { originalId: message.id, sink, method: message.method, params: message.params });
      this.onmessage?.({ ...message, id }, extra);
      return;
    }
    if ("method" in message) {
      // A cancellation names an id from some earlier HTTP request, which a stateless
      // server cannot map; forwarding it raw could cancel another caller's request.
      if (message.method === "notifications/cancelled") return;
      this.onmessage?.(message, extra);
    }
    // Responses from the client answer server-to-client requests, which this server never sends.
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ("id" in message && message.id !== undefined && ("result" in message || "error" in message)) {
      const entry = this.takePending(message.id);
      if (entry)
        await entry.sink.send(withInvalidParamsExplained({ ...message, id: entry.originalId }, entry));
      return;
    }
    // A notification during a request (progress, a log line) goes to that request's stream.
    const related = options?.relatedRequestId;
    const entry = typeof related === "number" ? this.pending.get(related) : undefined;
    if (entry) await entry.sink.send(message, { relatedRequestId: entry.originalId });
    // A message related to no live request has no stateless destination and is dropped.
  }

  private takePending(id: RequestId): Pending | undefined {
    if (typeof id !== "number") return undefined;
    const entry = this.pending.get(id);
    this.pending.delete(id);
    return entry;
  }
}

/**
 * The SDK answers params that fail its schema with zod's JSON dump. Only when the server answered
 * with an error are the params checked again (the happy path pays nothing); if they are at fault
 * the answer becomes -32602 with a one-line message (invalid-params.ts).
 */
function withInvalidParamsExplained(reply: JSONRPCMessage, request: Pending): JSONRPCMessage {
  if (!("error" in reply)) return reply;
  const code = reply.error.code;
  if (code !== ProtocolErrorCode.InternalError && code !== ProtocolErrorCode.InvalidParams) return reply;
  const message = invalidParamsMessage(request.method, request.params);
  return message === undefined
    ? reply
    : { ...reply, error: { code: ProtocolErrorCode.InvalidParams, message } };
}
