import { join } from "node:path";
import { Conflict, InvalidInput, NotFound } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import { exists } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition, removeFileSynced, sweepOwnerPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import type { LeftoverRules, RecoveryPass } from "../../storage/recovery.ts";
import { RecordLocator } from "../record-locator.ts";
import type { ConversationSettings } from "./config.ts";
import type { ConversationIndexes } from "./conversation-indexes.ts";
import {
  type EventPage,
  type EventPageQuery,
  type EventPageRequest,
  pageSpan,
  readPageRequest,
  wholeLog,
} from "./event-page.ts";
import { checkedWrite, checkSeqs } from "./limits.ts";
import {
  appendLines,
  appendLog,
  createLog,
  eventLines,
  foldLog,
  logStamp,
  readLog,
  readSpan,
} from "./log-file.ts";
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
 * Where a log ends, what it says so far and where its groups start: kept per log, written only
 * under its lock, so an append reads only the log's stamp and a page only the bytes it needs. A
 * stamp that differs (an operator edited the log) means the head is read again, whole.
 */
interface Head {
  end: number;
  summary: ConversationSummary;
  stamp: string;
  /** Sparse checkpoints seq → byte offset up to `end` (adr/0096). */
  offsets: SeqOffsets;
  /** Read again after a change on disk the index has not been told of: the next append tells it. */
  edited: boolean;
}

/**
 * Heads kept at once, by writers and readers; the oldest is dropped and read again from its log
 * when next used. A head's offsets hold at most one checkpoint (about 35 bytes of heap) per 64
 * events and per 64 KiB of its log: about 9 KB for a 16 MiB log (adr/0096).
 */
const MAX_HEADS = 10_000;

/** The conversation and one page of its events. */
export type ConversationPage = { conversation: ConversationSummary } & EventPage;

/**
 * Conversations at `<ws>/conversations/<owner>/cv_….jsonl`, one append-only log each (adr/0047).
 * Appends to one log run one at a time under its lock, each written whole at the end of the last
 * whole line and flushed before it is acknowledged, so two clients appending at once both land,
 * in some order, and a crash loses at most the append in flight. Every write tells the index
 * (conversation-indexes.ts) and the locator, and announces itself to the owner alone.
 */
export class ConversationStore implements LeftoverRules {
  private readonly locks = new KeyedLock();
  private readonly heads = new Map<string, Head>();
  private readonly locator = new RecordLocator();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly limits: ConversationSettings,
    readonly indexes: ConversationIndexes,
    private readonly events: EventPublisher,
    private readonly clock: Clock,
    private readonly isOwnFile: OwnFileCheck,
  ) {}

  /** A new conversation: its title event first (empty for an untitled one), then `drafts`. */
  async create(
    workspaceId: string,
    ownerId: string,
    title: string,
    drafts: EventDraft[] = [],
  ): Promise<ConversationSummary> {
    await this.checkFiles(workspaceId, ownerId, drafts);
    const at = this.now();
    return this.createLog(workspaceId, ownerId, [
      { seq: 1, at, type: "title", title },
      ...stamp(drafts, 1, at),
    ]);
  }

  /** A new conversation holding `id`'s events up to `throughSeq` (all by default), then its fork origin. */
  async fork(
    workspaceId: string,
    ownerId: string,
    id: string,
    options: { throughSeq?: number | undefined; title?: string | undefined },
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
    return this.createLog(workspaceId, ownerId, forked);
  }

  /** Appends events in order, all or none; returns them stamped and the conversation after them. */
  async append(
    workspaceId: string,
    ownerId: string,
    id: string,
    drafts: EventDraft[],
  ): Promise<{ conversation: ConversationSummary; events: ConversationEvent[] }> {
    const path = this.logPath(workspaceId, ownerId, id);
    await this.checkFiles(workspaceId, ownerId, drafts);
    const written = await this.locks.run(path, async () => {
      const head = await this.head(path, id);
      const events = stamp(drafts, head.summary.eventCount, this.now());
      checkSeqs(events);
      const bytes = checkedWrite(appendLines(events), head.end, this.limits);
      try {
        head.stamp = await appendLog(path, head.end, bytes);
      } catch (error) {
        // A failed write or flush was cut off again (log-file.ts appendLog), but that cut may
        // have failed too: how much reached the log is unknown, so it is read again next time.
        this.heads.delete(path);
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

  /**
   * The conversation and one page of its events, read from the bytes its head says hold the page
   * (adr/0096). Without the log's lock, so a page never waits for an append's flush: a head whose
   * stamp is still the open file's describes every byte up to its end, and appends only write past
   * it. A log without a head, or whose stamp differs (an append being written, an operator's edit),
   * is read under the lock, as an append would read it: whole, once, when its head is stale.
   */
  async get(
    workspaceId: string,
    ownerId: string,
    id: string,
    request: EventPageRequest = {},
  ): Promise<ConversationPage> {
    const path = this.logPath(workspaceId, ownerId, id);
    try {
      return await this.page(path, id, await this.pageQuery(path, id, request));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
      throw error;
    }
  }

  /**
   * The conversation and its events numbered `seqs` (ascending; one missing is left out), each
   * read as the one-event page that starts at it, from the groups that hold it: a search hit
   * shows at most five events, and read whole their log cost up to maxConversationBytes of reading
   * and parsing each (adr/0118). A log whose seqs are out of order is read whole once, as before.
   */
  async eventsNumbered(
    workspaceId: string,
    ownerId: string,
    id: string,
    seqs: readonly number[],
  ): Promise<{ conversation: ConversationSummary; events: ConversationEvent[] }> {
    const path = this.logPath(workspaceId, ownerId, id);
    const events: ConversationEvent[] = [];
    let conversation: ConversationSummary | undefined;
    // A log whose seqs are out of order (an operator's edit) may hold two events of one seq, which
    // a page starting at it would not both show: read whole, as before (seq-offsets.test.ts "out
    // of order").
    const whole = async () => {
      const read = await this.readWholeAt(path, id);
      return { conversation: read.conversation, events: read.events.filter((e) => seqs.includes(e.seq)) };
    };
    try {
      // The head before the first page: a page that built it would read an out-of-order log whole
      // once more to answer itself, before this read it whole to filter it.
      if (!this.heads.has(path)) await this.locks.run(path, () => this.head(path, id));
      if (!this.heads.get(path)?.offsets.ordered) return await whole();
      for (const seq of seqs) {
        const page = await this.page(path, id, { order: "oldest", after: seq - 1, limit: 1 });
        // The page reads the head again if the log changed on disk since.
        if (!this.heads.get(path)?.offsets.ordered) return await whole();
        conversation = page.conversation;
        const [event] = page.events;
        if (event?.seq === seq) events.push(event);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
      throw error;
    }
    // A hit has a seq at least: asked for none, there is no page to take the conversation from.
    if (conversation === undefined) throw new Error("eventsNumbered needs at least one seq");
    return { conversation, events };
  }

  /** Every event of the conversation, oldest first, for an export. */
  async readWhole(
    workspaceId: string,
    ownerId: string,
    id: string,
  ): Promise<{ conversation: ConversationSummary; events: ConversationEvent[] }> {
    return this.readWholeAt(this.logPath(workspaceId, ownerId, id), id);
  }

  async delete(workspaceId: string, ownerId: string, id: string): Promise<void> {
    const path = this.logPath(workspaceId, ownerId, id);
    const removal = await this.locks.run(path, async () => {
      this.heads.delete(path);
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
  ): Promise<ConversationSummary> {
    const id = newConversationId();
    checkSeqs(events);
    const lines = eventLines(events);
    const bytes = checkedWrite(lines, 0, this.limits);
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    await makeInPartition(ownerDir, workspaceId);
    const path = join(ownerDir, `${id}${LOG_SUFFIX}`);
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
    this.remember(path, { end: bytes.length, summary: { ...summary }, stamp, offsets, edited: false });
    await this.indexes.appended(workspaceId, ownerId, id, { from: 0, to: bytes.length, events });
    this.events.publish({ type: "conversation.created", workspaceId, ownerId, conversation: summary });
    return summary;
  }

  /**
   * The log's head, read whole again, with its offsets, when the one kept no longer matches the
   * log on disk. The read folds every event into the summary and the offsets and keeps none: a
   * summary is a fold of every line, so no byte can be left unread (adr/0119), but nothing needs
   * the events themselves. The caller holds the log's lock.
   */
  private async head(path: string, id: string): Promise<Head> {
    try {
      const known = this.heads.get(path);
      if (known && known.stamp === (await logStamp(path))) return known;
      const offsets = new SeqOffsets();
      const summary = summarize(id, []);
      const read = await foldLog(path, 0, (start, group) => {
        offsets.add(start, group);
        for (const event of group) foldEvent(summary, event);
      });
      return this.remember(path, {
        end: read.end,
        summary,
        stamp: read.stamp,
        offsets,
        edited: known !== undefined,
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
      throw error;
    }
  }

  /**
   * One page, from the bytes the head names when it is the open file's, without the log's lock; a
   * log without a head, or whose stamp differs, is read under the lock as an append would read it.
   */
  private async page(path: string, id: string, query: EventPageQuery): Promise<ConversationPage> {
    const known = this.heads.get(path);
    const page = known && (await this.pageFrom(path, id, known, query));
    if (page) return page;
    return this.locks.run(path, async () => {
      const head = await this.head(path, id);
      return (await this.pageFrom(path, id, head, query)) ?? this.wholePage(path, id, query);
    });
  }

  /** The request's limit and cursor; a log that is not there is not found first, as when it was read first. */
  private async pageQuery(path: string, id: string, request: EventPageRequest): Promise<EventPageQuery> {
    try {
      return readPageRequest(id, request);
    } catch (error) {
      await logStamp(path);
      throw error;
    }
  }

  /** The page from the bytes `head` names, or undefined when the log is no longer the file it describes. */
  private async pageFrom(
    path: string,
    id: string,
    head: Head,
    query: EventPageQuery,
  ): Promise<ConversationPage | undefined> {
    // All of it taken before the first await: an append landing meanwhile moves `head` on in place.
    const conversation = { ...head.summary };
    const range = head.offsets.rangeFor(query, head.end);
    if (range === undefined) return this.wholePage(path, id, query);
    const events = await readSpan(path, head.stamp, range.from, range.to);
    if (events === undefined) return undefined;
    return { conversation, ...pageSpan(id, { events, first: range.first, count: range.count }, query) };
  }

  /** The page from the whole log, for a log whose seqs are out of order (seq-offsets.ts). */
  private async wholePage(path: string, id: string, query: EventPageQuery): Promise<ConversationPage> {
    const { conversation, events } = await this.readWholeAt(path, id);
    return { conversation, ...pageSpan(id, wholeLog(events), query) };
  }

  private async readWholeAt(
    path: string,
    id: string,
  ): Promise<{ conversation: ConversationSummary; events: ConversationEvent[] }> {
    try {
      const { events } = await readLog(path);
      return { conversation: summarize(id, events), events };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
      throw error;
    }
  }

  private remember(path: string, head: Head): Head {
    this.heads.set(path, head);
    if (this.heads.size > MAX_HEADS) {
      const oldest = this.heads.keys().next().value;
      if (oldest !== undefined && oldest !== path && this.locks.isIdle(oldest)) this.heads.delete(oldest);
    }
    return head;
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

/** The one answer for a conversation that does not exist, is another person's, or was deleted. */
export function conversationNotFound(): NotFound {
  return new NotFound("conversation_not_found", "No conversation with that id that you can reach.");
}
