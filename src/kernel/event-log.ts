import { randomBytes } from "node:crypto";
import type { AtriumEvent, EventBus, EventType } from "./events.ts";

/** How many events each workspace keeps for a reconnecting reader (docs/events.md). */
export const EVENT_REPLAY_CAPACITY = 1000;
/**
 * How many events all workspaces keep together: without it, memory would grow with every
 * workspace that ever published, up to the capacity each. Past it, the least recently active
 * workspace's kept events are dropped (a reconnect there gets `reset`; its sequence goes on).
 */
export const EVENT_REPLAY_TOTAL = 100_000;

/** One event as a stream sends it: its id, its type, and the payload a client may see. */
export interface LoggedEvent {
  /** `<epoch>-<seq>`: the process's epoch, then the workspace's sequence (1, 2, …). */
  id: string;
  type: EventType;
  /** The event without `type` (it is the SSE event name) and `ownerId` (routing, not content). */
  data: Record<string, unknown>;
  /** Set on a private event: only this person may see it. */
  ownerId: string | undefined;
}

/** Where a follower's events go. `close` ends the follow: nothing is delivered after it. */
export interface EventSink {
  deliver(event: LoggedEvent): void;
  /** The id the follower gave cannot be resumed from: it must re-read state. */
  reset(): void;
  close(): void;
}

interface Follower {
  principalId: string;
  sink: EventSink;
}

interface WorkspaceLog {
  seq: number;
  recent: LoggedEvent[];
  followers: Set<Follower>;
  /**
   * Where each membership begun in this process began: the seq of the `member.added` that
   * made the person a member, until a `member.removed` ends it. A person not listed has been
   * a member since before the process started, so every event it numbered is theirs to replay.
   */
  joinedAt: Map<string, number>;
}

const EVENT_ID = /^([0-9a-f]{8})-([1-9][0-9]{0,15})$/;

/**
 * The workspace event stream's memory: a per-workspace sequence, the last events for replay,
 * and the live followers. The sequence lives in memory, so it restarts with the process; the
 * random epoch in every id lets a reader's old id be recognised as foreign instead of being
 * mistaken for a position in the new sequence. A private event (one with `ownerId`) reaches
 * only its owner, live and on replay. A replay never reaches back past the start of the
 * reader's current membership. A member removed from a workspace, a person deactivated,
 * and everyone in an archived workspace have their follows closed at once, so nothing more
 * reaches them.
 */
export class WorkspaceEventLog {
  readonly epoch = randomBytes(4).toString("hex");
  private readonly logs = new Map<string, WorkspaceLog>();
  /** The logs holding kept events, least recently published to first. */
  private readonly keeping = new Map<string, WorkspaceLog>();
  /** Events kept across every log. */
  private kept = 0;
  private closed = false;

  constructor(
    bus: EventBus,
    private readonly capacity = EVENT_REPLAY_CAPACITY,
    private readonly total = EVENT_REPLAY_TOTAL,
  ) {
    bus.subscribe({}, (event) => this.record(event));
  }

  /**
   * Follows `workspaceId` as `principalId`: first what they missed after `lastEventId` (or one
   * `reset` when that id cannot be resumed from), then every event as it is published. An id
   * from before the person's current membership began is not resumed from: what happened
   * while they were not a member is not theirs to read, so they get `reset`
   * (test/unit/kernel/event-log.test.ts "membership").
   * Returns the unfollow. The caller has already admitted the person to the workspace.
   */
  follow(
    workspaceId: string,
    principalId: string,
    lastEventId: string | undefined,
    sink: EventSink,
  ): () => void {
    if (this.closed) {
      sink.close();
      return () => {};
    }
    const log = this.logFor(workspaceId);
    if (lastEventId !== undefined && lastEventId !== "") {
      const missed = this.since(log, lastEventId, log.joinedAt.get(principalId) ?? 0);
      if (missed === undefined) sink.reset();
      else for (const event of missed) if (visibleTo(event, principalId)) sink.deliver(event);
    }
    const follower: Follower = { principalId, sink };
    log.followers.add(follower);
    return () => log.followers.delete(follower);
  }

  /** Ends every follow of `principalId`, in every workspace (they were deactivated). */
  closePerson(principalId: string): void {
    for (const log of this.logs.values()) this.closeWhere(log, (f) => f.principalId === principalId);
  }

  /** Ends every follow of an archived workspace and forgets its events: nothing can address it. */
  closeWorkspace(workspaceId: string): void {
    const log = this.logs.get(workspaceId);
    if (!log) return;
    this.logs.delete(workspaceId);
    this.forgetKept(workspaceId, log);
    this.closeWhere(log, () => true);
  }

  /** Ends every follow and refuses new ones: the server is draining. */
  closeAll(): void {
    this.closed = true;
    for (const log of this.logs.values()) this.closeWhere(log, () => true);
  }

  private record(event: AtriumEvent): void {
    const log = this.logFor(event.workspaceId);
    log.seq++;
    const { type, ownerId, ...data } = event as AtriumEvent & { ownerId?: string };
    const logged: LoggedEvent = { id: `${this.epoch}-${log.seq}`, type, data, ownerId };
    log.recent.push(logged);
    this.kept++;
    if (log.recent.length > this.capacity) {
      log.recent.shift();
      this.kept--;
    }
    this.keeping.delete(event.workspaceId);
    this.keeping.set(event.workspaceId, log);
    while (this.kept > this.total) {
      const [leastRecent, oldest] = this.keeping.entries().next().value as [string, WorkspaceLog];
      this.forgetKept(leastRecent, oldest);
    }
    for (const follower of log.followers) {
      if (visibleTo(logged, follower.principalId)) follower.sink.deliver(logged);
    }
    if (event.type === "member.added") log.joinedAt.set(event.principalId, log.seq);
    if (event.type === "member.removed") {
      log.joinedAt.delete(event.principalId);
      this.closeWhere(log, (f) => f.principalId === event.principalId);
    }
  }

  /**
   * The events after `lastEventId`, or undefined when it is foreign, malformed, too old, or
   * from before `joinedSeq`, the event that began the reader's membership.
   */
  private since(log: WorkspaceLog, lastEventId: string, joinedSeq: number): LoggedEvent[] | undefined {
    const match = EVENT_ID.exec(lastEventId);
    if (!match || match[1] !== this.epoch) return undefined;
    const seq = Number(match[2]);
    if (seq > log.seq) return undefined;
    const oldest = log.seq - log.recent.length + 1;
    // Resumable when the next event the reader needs is still kept (or nothing was missed),
    // and came no earlier than their membership: the event that began it is the first they see.
    if (seq + 1 < Math.max(oldest, joinedSeq)) return undefined;
    return log.recent.slice(seq + 1 - oldest);
  }

  /** Drops a log's kept events; its sequence stays, so a reader behind it gets `reset`. */
  private forgetKept(workspaceId: string, log: WorkspaceLog): void {
    this.kept -= log.recent.length;
    log.recent = [];
    this.keeping.delete(workspaceId);
  }

  private closeWhere(log: WorkspaceLog, matches: (follower: Follower) => boolean): void {
    for (const follower of [...log.followers]) {
      if (!matches(follower)) continue;
      log.followers.delete(follower);
      follower.sink.close();
    }
  }

  private logFor(workspaceId: string): WorkspaceLog {
    let log = this.logs.get(workspaceId);
    if (!log) {
      log = { seq: 0, recent: [], followers: new Set(), joinedAt: new Map() };
      this.logs.set(workspaceId, log);
    }
    return log;
  }
}

function visibleTo(event: LoggedEvent, principalId: string): boolean {
  return event.ownerId === undefined || event.ownerId === principalId;
}
