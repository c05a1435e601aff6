import type {
  JSONRPCMessage,
  MessageExtraInfo,
  RequestId,
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/server";
import { ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { AdmittedCaller } from "./front-server.ts";
import { invalidParamsMessage } from "./invalid-params.ts";
import { cursorRefusal } from "./list-cursor.ts";

/** Where the answer to one request goes: the per-request HTTP transport that received it. */
export interface ReplySink {
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void>;
  /**
   * The request the client numbered `id` was cancelled and will get no answer (the SDK drops a
   * cancelled handler's result): the exchange ends without it.
   */
  cancelled(id: RequestId): void;
}

/** An HTTP exchange that can tell when its client has gone before it was answered. */
export interface Abandonable {
  /** Calls `abandon` if the connection closes before the answer has been written. */
  whenAbandoned(abandon: () => void): void;
}

/**
 * An exchange whose caller the gate may stop admitting while its answer streams: asked, in
 * memory, once before a stream's answer is written, never per progress report (adr/0154).
 */
export interface Readmitted extends Abandonable {
  stillAdmitted(): boolean;
}

/** Whether `message` answers a request (its result or error), not a notification along the way. */
export function isAnswer(message: JSONRPCMessage): boolean {
  return "id" in message && message.id !== undefined && ("result" in message || "error" in message);
}

interface Pending {
  originalId: RequestId;
  sink: ReplySink;
  method: string;
  params: unknown;
  /** Who sent it: only they may cancel it. */
  caller: AdmittedCaller | undefined;
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

  /**
   * Hands one message from an HTTP request to the server; replies go to `sink`. A list request
   * with a cursor is answered here, in either era and inside a batch alike: the SDK serves
   * resources/list and resources/templates/list itself, with no hook that sees the cursor.
   */
  receive(message: JSONRPCMessage, extra: MessageExtraInfo | undefined, sink: ReplySink): void {
    if ("method" in message && "id" in message) {
      const refused = cursorRefusal(message.method, message.params);
      if (refused !== undefined) {
        const error = { code: ProtocolErrorCode.InvalidParams, message: refused };
        sink.send({ jsonrpc: "2.0", id: message.id, error }).catch((failure) => this.onerror?.(failure));
        return;
      }
      const id = ++this.nextId;
      const caller = callerOf(extra);
      this.pending.set(id, {
        originalId: message.id,
        sink,
        method: message.method,
        params: message.params,
        caller,
      });
      this.onmessage?.({ ...message, id }, extra);
      return;
    }
    if ("method" in message) {
      if (message.method === "notifications/cancelled") {
        this.cancelledBy(callerOf(extra), message.params);
        return;
      }
      this.onmessage?.(message, extra);
    }
    // Responses from the client answer server-to-client requests, which this server never sends.
  }

  /**
   * The HTTP exchange `sink` answers has gone (its client closed the connection): each of its
   * requests still running is cancelled, so a tool stops and a remote server is told.
   */
  abandon(sink: ReplySink): void {
    for (const [id, entry] of this.pending) {
      if (entry.sink === sink) this.cancel(id, entry, "The client closed the connection.");
    }
  }

  /**
   * Cancels every request still running whose caller `ends` names: their access has just ended
   * (an archive, a removal, a deactivation), and nothing the call still makes may reach them
   * (adr/0154).
   */
  cancelCallers(ends: (caller: AdmittedCaller) => boolean, reason: string): void {
    for (const [id, entry] of this.pending) {
      if (entry.caller !== undefined && ends(entry.caller)) this.cancel(id, entry, reason);
    }
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

  /**
   * A client's `notifications/cancelled` names its own id for a request it sent on another POST.
   * Ids are the client's, so only a request of the same caller — person and workspace — with that
   * id is cancelled (every one, if they sent two with one id): another caller's `id: 1` is never
   * theirs to stop (adr/0065).
   */
  private cancelledBy(caller: AdmittedCaller | undefined, params: unknown): void {
    const { requestId, reason } = (params ?? {}) as { requestId?: unknown; reason?: unknown };
    if (caller === undefined || (typeof requestId !== "string" && typeof requestId !== "number")) return;
    for (const [id, entry] of this.pending) {
      if (entry.originalId === requestId && sameCaller(entry.caller, caller)) {
        this.cancel(id, entry, typeof reason === "string" ? reason : "Cancelled by the client.");
      }
    }
  }

  /**
   * The server is told with its own id, which aborts the handler's signal (the SDK's
   * `notifications/cancelled` handling); the sink is told that no answer will come.
   */
  private cancel(id: number, entry: Pending, reason: string): void {
    this.pending.delete(id);
    this.onmessage?.({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: id, reason },
    });
    entry.sink.cancelled(entry.originalId);
  }

  private takePending(id: RequestId): Pending | undefined {
    if (typeof id !== "number") return undefined;
    const entry = this.pending.get(id);
    this.pending.delete(id);
    return entry;
  }
}

function callerOf(extra: MessageExtraInfo | undefined): AdmittedCaller | undefined {
  return extra?.authInfo?.extra?.atrium as AdmittedCaller | undefined;
}

function sameCaller(a: AdmittedCaller | undefined, b: AdmittedCaller): boolean {
  return a !== undefined && a.principal.id === b.principal.id && a.workspaceId === b.workspaceId;
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
