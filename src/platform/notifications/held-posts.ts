import type { Logger } from "../../log.ts";
import { storageFullReason } from "../../storage/storage-full.ts";
import type { Inbox } from "./inbox.ts";
import type { NotificationDraft } from "./model.ts";

/** At most this many runtime notifications are held for one workspace while the disk is full. */
export const HELD_PER_WORKSPACE = 50;
/** At most this many are held in all, whatever their workspaces. */
export const HELD_IN_ALL = 500;
/** How often the held ones are tried again when no later post has found space. */
export const HELD_RETRY_EVERY_MS = 60_000;

export const HELD_WARNING =
  "notifications held: the storage is full; they are posted once space has been freed";
export const DROPPED_WARNING =
  "notifications dropped: too many held while the storage is full; later ones are not posted";

interface Held {
  source: string;
  draft: NotificationDraft;
}

/**
 * The runtime's own posts (a connection that needs re-authorizing, a task run that failed, a member
 * deactivated) when the data root is full. Nobody is there to be answered 507 and try again, so a
 * post refused for want of storage is held in memory, in order, and posted once space is back: when
 * a later post succeeds, or at the next retry (HELD_RETRY_EVERY_MS), and before any later post to
 * the same workspace, so its inbox keeps them in the order they happened. Held within bounds, per
 * workspace and in all: past either, a notification is dropped, not the ones held before it, so one
 * workspace's flood cannot push out another's; the log says so once, not once per notification.
 * Held only in memory: a stop while the disk is still full loses them
 * (test/integration/notifications-held-on-full-disk.test.ts; adr/0165 amended).
 */
export class HeldPosts {
  private readonly held = new Map<string, Held[]>();
  private readonly retrying = new Map<string, Promise<void>>();
  private count = 0;
  /** Dropped since the last time nothing was held; the warning is said at the first. */
  private dropped = 0;

  constructor(
    private readonly inbox: Pick<Inbox, "post">,
    private readonly log: Logger,
  ) {}

  /** Posts a runtime notification, or holds it when the storage is full; throws any other error. */
  async post(workspaceId: string, source: string, draft: NotificationDraft): Promise<void> {
    if (this.held.has(workspaceId)) {
      this.hold(workspaceId, { source, draft });
      await this.retry(workspaceId);
      return;
    }
    try {
      await this.inbox.post(workspaceId, source, draft);
    } catch (error) {
      const reason = storageFullReason(error);
      if (reason === undefined) throw error;
      this.hold(workspaceId, { source, draft }, reason);
      return;
    }
    // A write landed: space is back, for the other workspaces' held notifications too.
    for (const other of this.workspaces()) await this.retry(other);
  }

  /** The workspaces with notifications held. */
  workspaces(): string[] {
    return [...this.held.keys()];
  }

  /** Posts the workspace's held notifications in order, until one is refused for storage again. */
  retry(workspaceId: string): Promise<void> {
    const under = this.retrying.get(workspaceId);
    if (under) return under;
    const retry = this.postHeld(workspaceId).finally(() => this.retrying.delete(workspaceId));
    this.retrying.set(workspaceId, retry);
    return retry;
  }

  private hold(workspaceId: string, held: Held, reason?: string): void {
    const queue = this.held.get(workspaceId) ?? [];
    if (queue.length >= HELD_PER_WORKSPACE || this.count >= HELD_IN_ALL) {
      if (this.dropped === 0) {
        this.log.warn(
          { workspaceId, source: held.source, perWorkspace: HELD_PER_WORKSPACE, inAll: HELD_IN_ALL },
          DROPPED_WARNING,
        );
      }
      this.dropped += 1;
      return;
    }
    if (this.count === 0) this.log.warn({ workspaceId, source: held.source, reason }, HELD_WARNING);
    queue.push(held);
    this.held.set(workspaceId, queue);
    this.count += 1;
  }

  private async postHeld(workspaceId: string): Promise<void> {
    const queue = this.held.get(workspaceId);
    if (!queue) return;
    // Read afresh each turn: one held while this runs is posted by it, after those before it.
    while (queue.length > 0) {
      const { source, draft } = queue[0] as Held;
      try {
        await this.inbox.post(workspaceId, source, draft);
      } catch (error) {
        if (storageFullReason(error) !== undefined) return;
        // Not the disk (the workspace was deleted since): posting it again would fail again.
        this.log.warn({ workspaceId, source, err: error }, "a held notification could not be posted");
      }
      queue.shift();
      this.count -= 1;
    }
    this.held.delete(workspaceId);
    if (this.count === 0) {
      this.log.info({ dropped: this.dropped }, "notifications held for a full disk are posted");
      this.dropped = 0;
    }
  }
}
