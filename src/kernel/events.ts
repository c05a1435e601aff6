import type { Logger } from "../log.ts";

/**
 * Every event names its workspace. One that carries `ownerId` is about something private to
 * that person (their file, their user-scope skill) and is for them alone; without it, it is
 * for every member of the workspace.
 */
interface Scoped {
  workspaceId: string;
}

interface Private extends Scoped {
  ownerId: string;
}

/** What Atrium announces, keyed `<family>.<name>` (CRAFT.md). */
export type AtriumEvent =
  | (Private & {
      type: "file.created";
      file: { id: string; name: string; mimeType: string; size: number; createdAt: string };
    })
  | (Private & { type: "file.deleted"; fileId: string })
  | (Scoped & {
      type: "skill.changed";
      scope: "workspace";
      name: string;
      change: SkillChange;
    })
  | (Private & {
      type: "skill.changed";
      scope: "user";
      name: string;
      change: SkillChange;
    })
  | (Scoped & { type: "member.added"; principalId: string; role: "admin" | "member" })
  | (Scoped & { type: "member.removed"; principalId: string })
  /** An org admin deactivated a member: published once for each workspace they belong to. */
  | (Scoped & { type: "member.deactivated"; principalId: string; name?: string | undefined })
  /** A connection's derived state moved (ADR 0039): `running`, `degraded`, `reauth_required`… */
  | (Scoped & { type: "connection.state_changed"; name: string; state: string; previous: string | undefined })
  /** A personal connection's (`my_…`, ADR 0042): for its owner alone, in each workspace they are in. */
  | (Private & {
      type: "connection.state_changed";
      name: string;
      state: string;
      previous: string | undefined;
    })
  /** A task run began or ended: private to its owner for a private task, the workspace's for a shared one. */
  | (Scoped & { type: "task.run.started"; run: TaskRunSummary })
  | (Private & { type: "task.run.started"; run: TaskRunSummary })
  | (Scoped & { type: "task.run.finished"; run: TaskRunSummary })
  | (Private & { type: "task.run.finished"; run: TaskRunSummary })
  | (Scoped & { type: "notification.created"; notification: NotificationSummary })
  | (Private & { type: "notification.created"; notification: NotificationSummary })
  | (Private & { type: "conversation.created"; conversation: ConversationInfo })
  /** Events were appended to a conversation (`appended`), or only its title changed (`title`). */
  | (Private & { type: "conversation.updated"; change: "appended" | "title"; conversation: ConversationInfo })
  | (Private & { type: "conversation.deleted"; conversationId: string });

/** What the event stream says of a conversation: its summary, never its events (docs/conversations.md). */
export interface ConversationInfo {
  id: string;
  title: string;
  messageCount: number;
  eventCount: number;
  createdAt: string;
  updatedAt: string;
  forkOf?: { conversationId: string; seq: number };
}

/** What the event stream says of a new inbox entry; the entry itself is read from the inbox. */
export interface NotificationSummary {
  id: string;
  seq: number;
  source: string;
  severity: string;
  title: string;
}

/** What the event stream says of a task run; the run itself is read with tasks__get_run. */
export interface TaskRunSummary {
  id: string;
  taskId: string;
  taskName: string;
  /** The task's owner, as whom the run acts; set on a shared task's run too. */
  taskOwnerId: string;
  trigger: string;
  execution: string;
  assessment: string;
  /** Why the run did not succeed, when it did not. */
  error?: { code: string; message: string; reason?: string };
}

export type SkillChange = "created" | "updated" | "deleted";
export type EventType = AtriumEvent["type"];
export type EventOf<T extends EventType> = Extract<AtriumEvent, { type: T }>;

/** Which events a subscriber wants: by type, by workspace, or both; empty means every one. */
export interface EventFilter<T extends EventType> {
  types?: readonly T[];
  workspaceId?: string;
}

/** What an emitter needs: it announces, it never listens. */
export interface EventPublisher {
  publish(event: AtriumEvent): void;
}

interface Subscription {
  types: ReadonlySet<string> | undefined;
  workspaceId: string | undefined;
  handler: (event: AtriumEvent) => unknown;
}

/**
 * In-process, synchronous fan-out: `publish` returns once every matching subscriber has been
 * called, in the order they subscribed. A subscriber that throws (or whose promise rejects)
 * is logged and the others still get the event, so a broken reader never fails the write
 * that published (test/unit/kernel/events.test.ts). Nothing is kept: a subscriber sees what
 * is published after it subscribed (replay belongs to the reader, not the bus; ADR 0031).
 */
export class EventBus implements EventPublisher {
  private subscriptions: Subscription[] = [];
  /** Subscribers' work an event started that has not ended (settled()), by the event's type. */
  private readonly working = new Map<Promise<unknown>, EventType>();

  constructor(private readonly log: Logger) {}

  publish(event: AtriumEvent): void {
    // A snapshot: a handler that subscribes or unsubscribes changes the next publish, not this one.
    for (const sub of this.subscriptions) {
      if (sub.types && !sub.types.has(event.type)) continue;
      if (sub.workspaceId !== undefined && sub.workspaceId !== event.workspaceId) continue;
      try {
        const result = sub.handler(event);
        if (result instanceof Promise) {
          const work = result.catch((error: unknown) => this.failed(event, error));
          this.working.set(work, event.type);
          void work.finally(() => this.working.delete(work));
        }
      } catch (error) {
        this.failed(event, error);
      }
    }
  }

  /**
   * Resolves once no subscriber's work is in flight, work begun while waiting included: an event
   * published during a graceful stop (a run recorded interrupted) starts writes of other apps
   * (its notification) after their own stop returned, and the stop waits for them here before
   * it lets go of the root (graceful-stop.ts).
   */
  async settled(): Promise<void> {
    while (this.working.size > 0) await Promise.all([...this.working.keys()]);
  }

  /** The types of the events whose subscribers' work is in flight, for a stop that gave up on it. */
  inFlight(): EventType[] {
    return [...new Set(this.working.values())];
  }

  /** Calls `handler` with each matching event from now on; returns the unsubscribe. */
  subscribe<T extends EventType = EventType>(
    filter: EventFilter<T>,
    handler: (event: EventOf<T>) => unknown,
  ): () => void {
    const sub: Subscription = {
      types: filter.types ? new Set<string>(filter.types) : undefined,
      workspaceId: filter.workspaceId,
      // The type filter above guarantees only EventOf<T> reaches this handler.
      handler: handler as (event: AtriumEvent) => unknown,
    };
    this.subscriptions = [...this.subscriptions, sub];
    return () => {
      this.subscriptions = this.subscriptions.filter((s) => s !== sub);
    };
  }

  private failed(event: AtriumEvent, error: unknown): void {
    this.log.warn(
      { event: event.type, workspaceId: event.workspaceId, err: error },
      "event subscriber failed",
    );
  }
}
