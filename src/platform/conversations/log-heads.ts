import { NotFound } from "../../errors.ts";
import type { KeyedLock } from "../../storage/keyed-lock.ts";
import {
  type EventPage,
  type EventPageQuery,
  type EventPageRequest,
  pageSpan,
  readPageRequest,
  wholeLog,
} from "./event-page.ts";
import { foldLog, logStamp, readLog, readSpan } from "./log-file.ts";
import { type ConversationEvent, type ConversationSummary, foldEvent, summarize } from "./model.ts";
import { SeqOffsets } from "./seq-offsets.ts";

/**
 * Where a log ends, what it says so far and where its groups start: kept per log, written only
 * under its lock, so an append reads only the log's stamp and a page only the bytes it needs. A
 * stamp that differs (an operator edited the log) means the head is read again, whole.
 */
export interface Head {
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

/** A conversation and some of its events. */
export interface ConversationEvents {
  conversation: ConversationSummary;
  events: ConversationEvent[];
}

/**
 * The heads of conversations' logs, and the reads made through them: pages (adr/0096) and a search
 * hit's events (adr/0118). A head is written only under its log's lock, `locks`, which the store's
 * writers share: they move a head on as they append to its log, and make one for a log they create.
 */
export class LogHeads {
  private readonly heads = new Map<string, Head>();

  constructor(private readonly locks: KeyedLock) {}

  /**
   * The log's head, read whole again, with its offsets, when the one kept no longer matches the
   * log on disk. The read folds every event into the summary and the offsets and keeps none: a
   * summary is a fold of every line, so no byte can be left unread (adr/0119), but nothing needs
   * the events themselves. The caller holds the log's lock.
   */
  async current(path: string, id: string): Promise<Head> {
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

  /** Keeps `head` for the log at `path`, dropping the oldest head of a log nobody holds past MAX_HEADS. */
  remember(path: string, head: Head): Head {
    this.heads.set(path, head);
    if (this.heads.size > MAX_HEADS) {
      const oldest = this.heads.keys().next().value;
      if (oldest !== undefined && oldest !== path && this.locks.isIdle(oldest)) this.heads.delete(oldest);
    }
    return head;
  }

  /** Forgets the log's head: the log is gone, or where it ends is no longer known. The caller holds its lock. */
  forget(path: string): void {
    this.heads.delete(path);
  }

  /**
   * The conversation and one page of its events, read from the bytes its head says hold the page
   * (adr/0096). Without the log's lock, so a page never waits for an append's flush: a head whose
   * stamp is still the open file's describes every byte up to its end, and appends only write past
   * it. A log without a head, or whose stamp differs (an append being written, an operator's edit),
   * is read under the lock, as an append would read it: whole, once, when its head is stale.
   */
  async page(path: string, id: string, request: EventPageRequest): Promise<ConversationPage> {
    try {
      return await this.pageAt(path, id, await this.pageQuery(path, id, request));
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
  async eventsNumbered(path: string, id: string, seqs: readonly number[]): Promise<ConversationEvents> {
    const events: ConversationEvent[] = [];
    let conversation: ConversationSummary | undefined;
    // A log whose seqs are out of order (an operator's edit) may hold two events of one seq, which
    // a page starting at it would not both show: read whole, as before (seq-offsets.test.ts "out
    // of order").
    const whole = async () => {
      const read = await this.readWhole(path, id);
      return { conversation: read.conversation, events: read.events.filter((e) => seqs.includes(e.seq)) };
    };
    try {
      // The head, current, before the first page: a page that built it, or found the one kept stale
      // (an edit on disk since), would read an out-of-order log whole once more to answer itself,
      // before this read it whole to filter it. Kept and current, this costs a stat and takes no
      // lock: a hit, like a page, never waits behind an append's flush.
      const kept = this.heads.get(path);
      if (kept?.stamp !== (await logStamp(path))) await this.locks.run(path, () => this.current(path, id));
      if (!this.heads.get(path)?.offsets.ordered) return await whole();
      for (const seq of seqs) {
        const page = await this.pageAt(path, id, { order: "oldest", after: seq - 1, limit: 1 });
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

  /** Every event of the log, oldest first, and the summary they make; its head is neither read nor kept. */
  async readWhole(path: string, id: string): Promise<ConversationEvents> {
    try {
      const { events } = await readLog(path);
      return { conversation: summarize(id, events), events };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw conversationNotFound();
      throw error;
    }
  }

  /**
   * One page, from the bytes the head names when it is the open file's, without the log's lock; a
   * log without a head, or whose stamp differs, is read under the lock as an append would read it.
   */
  private async pageAt(path: string, id: string, query: EventPageQuery): Promise<ConversationPage> {
    const known = this.heads.get(path);
    const page = known && (await this.pageFrom(path, id, known, query));
    if (page) return page;
    return this.locks.run(path, async () => {
      const head = await this.current(path, id);
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
    const { conversation, events } = await this.readWhole(path, id);
    return { conversation, ...pageSpan(id, wholeLog(events), query) };
  }
}

/** The one answer for a conversation that does not exist, is another person's, or was deleted. */
export function conversationNotFound(): NotFound {
  return new NotFound("conversation_not_found", "No conversation with that id that you can reach.");
}
