import { Hono } from "hono";
import { TooManyRequests } from "../errors.ts";
import type { EventSink, LoggedEvent, WorkspaceEventLog } from "../kernel/event-log.ts";
import type { Timers } from "../kernel/timers.ts";
import type { AppEnv } from "../web/app-env.ts";

/** How a stream behaves toward its client (docs/events.md). */
export interface EventStreamLimits {
  /** A comment line this often keeps proxies and clients from timing an idle stream out. */
  heartbeatMs: number;
  /** Bytes a connection may have queued and unsent; past this the client is disconnected. */
  maxQueuedBytes: number;
  /**
   * Streams one person may hold open at once, across every workspace: each holds a socket and a
   * follower, and nothing else bounds how many one member opens.
   */
  maxStreamsPerPerson: number;
}

export const EVENT_STREAM_LIMITS: EventStreamLimits = {
  heartbeatMs: 15_000,
  maxQueuedBytes: 1024 * 1024,
  maxStreamsPerPerson: 32,
};

const encoder = new TextEncoder();

/** One event in the SSE wire format; `data` is one line (JSON escapes every newline). */
export function sseEvent(type: string, data: unknown, id?: string): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

const RESET = sseEvent("reset", { reason: "The events you missed are gone; re-read state." });
const HEARTBEAT = ": heartbeat\n\n";

export interface EventStreamRequest {
  workspaceId: string;
  principalId: string;
  lastEventId: string | undefined;
  /** Cuts the connection itself: a slow consumer is dropped, not left holding its queue. */
  disconnect?: () => void;
  /** Told once, when the stream ends, however it ends. */
  ended?: () => void;
}

/**
 * The body of one event stream: replay or reset, then live events and heartbeats. The queue
 * is counted in bytes; an event that would push it past `maxQueuedBytes` ends the stream
 * instead of growing the queue (a client that does not read cannot make the server hold
 * memory without bound). A replay is not a slow reader: one larger than the bound is sent as
 * `reset` instead (cut, the client would reconnect with the same Last-Event-ID for ever). A
 * closed stream unfollows and stops its heartbeat.
 */
export function openEventStream(
  events: WorkspaceEventLog,
  timers: Timers,
  request: EventStreamRequest,
  limits: Pick<EventStreamLimits, "heartbeatMs" | "maxQueuedBytes"> = EVENT_STREAM_LIMITS,
): ReadableStream<Uint8Array> {
  let ended = false;
  let unfollow = (): void => {};
  let stopHeartbeat = (): void => {};
  let queue: ReadableStreamDefaultController<Uint8Array>;
  /** What the log replays as the follow starts, held to be sent whole or as one reset. */
  let replay: string[] | undefined;

  const end = (): void => {
    if (ended) return;
    ended = true;
    unfollow();
    stopHeartbeat();
    request.ended?.();
  };
  const send = (text: string): void => {
    if (ended) return;
    if (replay) {
      replay.push(text);
      return;
    }
    const bytes = encoder.encode(text);
    if ((queue.desiredSize ?? 0) < bytes.byteLength) {
      end();
      queue.close();
      request.disconnect?.();
      return;
    }
    queue.enqueue(bytes);
  };
  const beat = (): void => {
    send(HEARTBEAT);
    if (!ended) stopHeartbeat = timers.after(limits.heartbeatMs, beat);
  };
  const sink: EventSink = {
    deliver: (event: LoggedEvent) => send(sseEvent(event.type, event.data, event.id)),
    reset: () => send(RESET),
    close: () => {
      if (ended) return;
      end();
      queue.close();
    },
  };

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        queue = controller;
        // Sent at once, so the client knows the stream is open before the first event.
        send(HEARTBEAT);
        replay = [];
        const off = events.follow(request.workspaceId, request.principalId, request.lastEventId, sink);
        const missed = replay;
        replay = undefined;
        // Closed while following began (the server draining): nothing may stay followed.
        if (ended) {
          off();
          return;
        }
        unfollow = off;
        const bytes = missed.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
        if (bytes > (controller.desiredSize ?? 0)) send(RESET);
        else for (const text of missed) send(text);
        if (!ended) stopHeartbeat = timers.after(limits.heartbeatMs, beat);
      },
      cancel: end,
    },
    new ByteLengthQueuingStrategy({ highWaterMark: limits.maxQueuedBytes }),
  );
}

/** Node's response, as @hono/node-server hands it to the app in `c.env`. */
interface NodeBindings {
  outgoing?: { destroy(): void };
}

const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-accel-buffering": "no",
  // A stream holds its connection to the end; when it ends (a drain, a removal, a slow
  // reader) the connection goes too, so no idle keep-alive socket holds a drain open.
  connection: "close",
};

/** `GET /events` (and its `HEAD`), relative to the workspace app (behind the gate). */
export function eventStreamRoutes(
  events: WorkspaceEventLog,
  timers: Timers,
  limits: EventStreamLimits = EVENT_STREAM_LIMITS,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const open = new Map<string, number>();
  app.get("/events", (c) => {
    // Admitted again in the turn the stream starts following: a deactivation or removal that came
    // while the request was signed in (its directory record written) has already closed the
    // person's streams, and would never close this one.
    c.get("admitAgain")?.();
    const { workspace } = c.get("admission");
    const principalId = c.get("principal").id;
    const held = open.get(principalId) ?? 0;
    if (held >= limits.maxStreamsPerPerson) {
      throw new TooManyRequests(
        "too_many_streams",
        `You have ${held} event streams open, the most one person may: close one before opening another.`,
      );
    }
    // hono answers a HEAD with this handler and drops the body (headWithoutBody cancels it): a
    // HEAD gets the status a GET would, past the stream limit too, and the stream's headers
    // without following the log at all, not even until the cancel
    // (test/integration/event-stream.test.ts "HEAD").
    if (c.req.method === "HEAD") return new Response(null, { headers: STREAM_HEADERS });
    open.set(principalId, held + 1);
    const outgoing = (c.env as NodeBindings | undefined)?.outgoing;
    const body = openEventStream(
      events,
      timers,
      {
        workspaceId: workspace.id,
        principalId,
        lastEventId: c.req.header("last-event-id"),
        disconnect: () => outgoing?.destroy(),
        ended: () => {
          const left = (open.get(principalId) ?? 1) - 1;
          if (left > 0) open.set(principalId, left);
          else open.delete(principalId);
        },
      },
      limits,
    );
    return new Response(body, { headers: STREAM_HEADERS });
  });
  return app;
}
