import { join } from "node:path";
import { Conflict, InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import { exists } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition, removeFileSynced, sweepOwnerPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import type { LeftoverRules, RecoveryPass } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { RecordLocator } from "../record-locator.ts";
import type { ConversationSettings } from "./config.ts";
import type { ConversationIndexes } from "./conversation-indexes.ts";
import type { EventPageRequest } from "./event-page.ts";
import { checkedWrite, checkSeqs } from "./limits.ts";
import { appendLines, appendLog, createLog, eventLines, logStamp } from "./log-file.ts";
import {
  type ConversationEvents,
  type ConversationPage,
  conversationNotFound,
  LogHeads,
} from "./log-heads.ts";
import {
  type ConversationEvent,
  type ConversationSummary,
  conversationIdOfFile,
  type EventDraft,
  foldEvent,
  isConversationId,
  LOG_SUFFIX,
  newConversationId,
  summarize,
} from "./model.ts";
import { SeqOffsets } from "./seq-offsets.ts";

/** Whether `fileId` is `ownerId`'s own file in `workspaceId` (asked of the files app). */
export type OwnFileCheck = (workspaceId: string, ownerId: string, fileId: string) => Promise<boolean>;

/**
 * Conversations at `<ws>/conversations/<owner>/cv_….jsonl`, one append-only log each (adr/0047).
 * Appends to one log run one at a time under its lock, each written whole at the end of the last
 * whole line and flushed before it is acknowledged, so two clients appending at once both land,
 * in some order, and a crash loses at most the append in flight. Every write tells the index
 * (conversation-indexes.ts) and the locator, and announces itself to the owner alone.
 */
export class ConversationStore implements LeftoverRules {
  private readonly locks = new KeyedLock();
  private readonly heads = new LogHeads(this.locks);
  private readonly locator = new RecordLocator();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly limits: ConversationSettings,
    readonly indexes: ConversationIndexes,
    private readonly events: EventPublisher,
    private readonly clock: Clock,
    private readonly isOwnFile: OwnFileCheck,
  ) {}

  /**
   * A new conversation: its title event first (empty for an untitled one), then `drafts` (none when
   * `undefined`). Here and in each change below, `access` is asked just before the one write that
   * makes the change seen (the log's exclusive create, its append under the log's lock, its
   * removal): refused, nothing changes and its refusal is thrown (adr/0154, amended).
   */
  async create(
    workspaceId: string,
    ownerId: string,
    title: string,
    drafts: EventDraft[] | undefined,
    access: AccessCheck,
  ): Promise<ConversationSummary> {
    const events = drafts ?? [];
    await this.checkFiles(workspaceId, ownerId, events);
    const at = this.now();
    return this.createLog(
      workspaceId,
      ownerId,
      [{ seq: 1, at, type: "title", title }, ...stamp(events, 1, at)],
      access,
    );
  }

  /** A new conversation holding `id`'s events up to `throughSeq` (all by default), then its fork origin. */
  async fork(
    workspaceId: string,
    ownerId: string,
    id: string,
    options: { throughSeq?: number | undefined; title?: string | undefined },
    access: AccessCheck,
  ): Promise<ConversationSummary> {
    const { events } = await this.readWhole(workspaceId, ownerId, id);
    const last = events[events.length - 1]?.seq ?? 0;
    const through = options.throughSeq ?? last;
    if (!Number.isSafeInteger(through) || through < 1 || through > last) {
      throw new InvalidInput(`throughSeq is the seq of an event of ${id}, from 1 to ${last}.`);
    }
    const at = this.now();
    const forked: ConversationEvent[] = [
      ...events.filter((event) => event.seq <= through),
      { seq: through + 1, at, type: "fork", from: { conversationId: id, seq: through } },
    ];
    if (options.title !== undefined)
      forked.push({ seq: through + 2, at, type: "title", title: options.title });
    return this.createLog(workspaceId, ownerId, forked, access);
  }

  /** Appends events in order, all or none; returns them stamped and the conversation after them. */
  async append(
    workspaceId: string,
    ownerId: string,
    id: string,
    drafts: EventDraft[],
    access: AccessCheck,
  ): Promise<{ conversation: ConversationSummary; events: ConversationEvent[] }> {
    const path = this.logPath(workspaceId, ownerId, id);
    await this.checkFiles(workspaceId, ownerId, drafts);
    const written = await this.locks.run(path, async () => {
      const head = await this.heads.current(path, id);
      const events = stamp(drafts, head.summary.eventCount, this.now());
      checkSeqs(events);
      const bytes = checkedWrite(appendLines(events), head.end, this.limits);
      access();
      try {
        head.stamp = await appendLog(path, head.end, bytes);
      } catch (error) {
        // A failed write or flush was cut off again (log-file.ts appendLog), but that cut may
        // have failed too: how much reached the log is unknown, so it is read again next time.
        this.heads.forget(path);
        if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
        throw error;
      }
      const from = head.end;
      const { edited } = head;
      head.edited = false;
      head.end += bytes.length;
      head.offsets.add(from, events);
      for (const event of events) foldEvent(head.summary, event);
      return { from, to: head.end, events, conversation: { ...head.summary }, edited };
    });
    await this.indexes.appended(workspaceId, ownerId, id, written);
    const change = drafts.every((draft) => draft.type === "title") ? "title" : "appended";
    this.events.publish({
      type: "conversation.updated",
      workspaceId,
      ownerId,
      change,
      conversation: written.conversation,
    });
    return { conversation: written.conversation, events: written.events };
  }

  /** The conversation and one page of its events, read through its log's head (log-heads.ts, adr/0096). */
  async get(
    workspaceId: string,
    ownerId: string,
    id: string,
    request: EventPageRequest = {},
  ): Promise<ConversationPage> {
    return this.heads.page(this.logPath(workspaceId, ownerId, id), id, request);
  }

  /**
   * The conversation and its events numbered `seqs` (ascending; one missing is left out), for a
   * search hit: read as one-event pages, not its whole log (log-heads.ts, adr/0118).
   */
  async eventsNumbered(
    workspaceId: string,
    ownerId: string,
    id: string,
    seqs: readonly number[],
  ): Promise<ConversationEvents> {
    return this.heads.eventsNumbered(this.logPath(workspaceId, ownerId, id), id, seqs);
  }

  /** Every event of the conversation, oldest first, for an export. */
  async readWhole(workspaceId: string, ownerId: string, id: string): Promise<ConversationEvents> {
    return this.heads.readWhole(this.logPath(workspaceId, ownerId, id), id);
  }

  async delete(workspaceId: string, ownerId: string, id: string, access: AccessCheck): Promise<void> {
    const path = this.logPath(workspaceId, ownerId, id);
    const removal = await this.locks.run(path, async () => {
      access();
      this.heads.forget(path);
      return removeFileSynced(path);
    });
    if (removal === "gone") throw conversationNotFound();
    this.locator.delete(id, { workspaceId, ownerId });
    await this.indexes.removed(workspaceId, ownerId, id);
    this.events.publish({ type: "conversation.deleted", workspaceId, ownerId, conversationId: id });
  }

  /**
   * The workspace of a bare conversation id, in one lookup: only the caller's own, in a
   * workspace they are a member of now; anything else is the same not-found (adr/0025). The
   * caller's own logs of one id in two of their workspaces (an operator's copy) are neither,
   * `409 conversation_id_ambiguous`, as a file's are (adr/0111).
   */
  async locate(ownerId: string, id: string, isMember: (workspaceId: string) => boolean): Promise<string> {
    const found = await this.locator.workspacesOf(ownerId, id, isMember, ({ workspaceId }) =>
      exists(this.logPath(workspaceId, ownerId, id)),
    );
    const [workspaceId] = found;
    if (workspaceId === undefined) throw conversationNotFound();
    if (found.length > 1)
      throw new Conflict(
        "conversation_id_ambiguous",
        `${id} names a conversation of yours in more than one workspace (${found.join(", ")}): an operator copied or restored it twice. Ask an operator to move one copy out of the data root.`,
      );
    return workspaceId;
  }

  /**
   * R1 (the index snapshot's temp files) in each owner folder, and the locator's entries for the
   * logs found: at housekeeping also a log an operator copied in on disk.
   */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (!present.has(this.storage.partition)) return;
    const owners = await sweepOwnerPartition(this.storage.dir(workspaceId), pass);
    this.locator.remember(workspaceId, owners, conversationIdOfFile);
  }

  private async createLog(
    workspaceId: string,
    ownerId: string,
    events: ConversationEvent[],
    access: AccessCheck,
  ): Promise<ConversationSummary> {
    const id = newConversationId();
    checkSeqs(events);
    const lines = eventLines(events);
    const bytes = checkedWrite(lines, 0, this.limits);
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    await makeInPartition(ownerDir, workspaceId);
    const path = join(ownerDir, `${id}${LOG_SUFFIX}`);
    access();
    // 96 random bits: a collision is a broken random source, not a race to answer.
    if (!(await createLog(path, bytes))) throw new Error(`conversation id ${id} is taken`);
    this.locator.set(id, { workspaceId, ownerId });
    const summary = summarize(id, events);
    // A new log is written a line per event: each line is a group of its own.
    const offsets = new SeqOffsets();
    let start = 0;
    events.forEach((event, i) => {
      offsets.add(start, [event]);
      start += (lines[i] as Buffer).length;
    });
    const stamp = await logStamp(path);
    this.heads.remember(path, { end: bytes.length, summary: { ...summary }, stamp, offsets, edited: false });
    await this.indexes.appended(workspaceId, ownerId, id, { from: 0, to: bytes.length, events });
    this.events.publish({ type: "conversation.created", workspaceId, ownerId, conversation: summary });
    return summary;
  }

  /** Every file a message references must be the caller's own here; checked before anything is written. */
  private async checkFiles(
    workspaceId: string,
    ownerId: string,
    drafts: readonly EventDraft[],
  ): Promise<void> {
    const fileIds = new Set(
      drafts.flatMap((draft) =>
        draft.type === "message"
          ? draft.content.flatMap((block) => (block.type === "file" ? [block.fileId] : []))
          : [],
      ),
    );
    for (const fileId of fileIds) {
      if (!(await this.isOwnFile(workspaceId, ownerId, fileId))) {
        throw new InvalidInput(
          `${fileId} is not one of your files in this workspace: a message may reference only your own files here. Nothing was written.`,
        );
      }
    }
  }

  /** The log's path; an id that is not a conversation id names nothing there. */
  private logPath(workspaceId: string, ownerId: string, id: string): string {
    if (!isConversationId(id)) throw conversationNotFound();
    return join(this.storage.ownerDir(workspaceId, ownerId), `${id}${LOG_SUFFIX}`);
  }

  private now(): string {
    return new Date(this.clock()).toISOString();
  }
}

/** Drafts as events with seqs after `lastSeq`, all stamped `at`. */
function stamp(drafts: readonly EventDraft[], lastSeq: number, at: string): ConversationEvent[] {
  return drafts.map((draft, i) => ({ seq: lastSeq + 1 + i, at, ...draft }));
}
