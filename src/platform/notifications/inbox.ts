import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { InvalidInput, NotFound } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import {
  parseStoredJson,
  readJsonIfExists,
  WrittenNotFlushed,
  writeJsonAtomic,
} from "../../storage/atomic.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { ACKS, isAcked, type Listed, MemberAcks } from "./acks.ts";
import type { NotificationSettings } from "./config.ts";
import { ENTRIES, type EntryName, entryFile, listEntryNames } from "./entry-names.ts";
import {
  checkDraft,
  isNotificationId,
  isVisibleTo,
  type Notification,
  type NotificationDraft,
  type NotificationView,
  newNotificationId,
} from "./model.ts";
import { AddresseeNames } from "./names-upgrade.ts";

/**
 * The highest seq ever given: written before the entry that takes it, so no seq an entry ever held,
 * even one a failed post removed again, is given twice after a restart (ADR 0124 amended).
 */
const SEQ_MARK = "seq.json";
const DAY_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

export interface InboxPage {
  notifications: NotificationView[];
  /** Pass back as `cursor` for the next (older) page; absent on the last one. */
  nextCursor?: string;
}

export interface InboxQuery {
  cursor?: string | undefined;
  limit?: number | undefined;
  /** Only what this member has not acknowledged. */
  unacked?: boolean | undefined;
}

/**
 * A workspace's inbox at `<ws>/notifications/`: one JSON file per entry under `entries/`, named
 * by its seq, id and addressee (entry-names.ts), so a page reads only what its reader may see;
 * one acknowledgements file per member (acks.ts); and `seq.json`, the sequence's high-water
 * mark. Posts to one workspace are serialised, so seqs are gapless while posts succeed and never
 * reused: a post writes the mark before its entry, the next seq after a restart is one past the
 * highest entry or mark on disk, and retention writes the mark before it removes anything.
 */
export class Inbox implements LeftoverRules {
  private readonly lock = new KeyedLock();
  private readonly lastSeq = new Map<string, number>();
  /** Posts not yet ended, by workspace (readyNames()). */
  private readonly posting = new Map<string, Set<Promise<Notification>>>();
  private readonly names: AddresseeNames;
  private readonly acks: MemberAcks;

  constructor(
    private readonly storage: PartitionPaths,
    private readonly settings: NotificationSettings,
    private readonly events: EventPublisher,
    private readonly clock: Clock,
  ) {
    this.acks = new MemberAcks(storage);
    this.names = new AddresseeNames(storage, (workspaceId, name) => this.readEntry(workspaceId, name));
  }

  /** Records an entry for `source`; the runtime stamps id, seq, workspace, source and time. */
  post(workspaceId: string, source: string, draft: NotificationDraft): Promise<Notification> {
    const posting = this.postNow(workspaceId, source, draft);
    const inFlight = this.posting.get(workspaceId) ?? new Set();
    inFlight.add(posting);
    this.posting.set(workspaceId, inFlight);
    const ended = () => {
      inFlight.delete(posting);
      if (inFlight.size === 0 && this.posting.get(workspaceId) === inFlight) this.posting.delete(workspaceId);
    };
    posting.then(ended, ended);
    return posting;
  }

  private async postNow(
    workspaceId: string,
    source: string,
    draft: NotificationDraft,
  ): Promise<Notification> {
    const { title, body, severity, to, data } = checkDraft(draft);
    return this.lock.run(workspaceId, async () => {
      await this.names.upgrade(workspaceId);
      const entriesDir = await this.ensureDir(workspaceId, ENTRIES);
      // The first entry of an inbox: its names carry their addressee from the start.
      if (!this.names.known(workspaceId)) await this.names.mark(workspaceId);
      const seq = (await this.highestSeq(workspaceId)) + 1;
      const entry: Notification = {
        id: newNotificationId(),
        seq,
        workspaceId,
        source,
        receivedAt: new Date(this.clock()).toISOString(),
        title: title.trim(),
        severity: severity ?? "info",
        ...(body === undefined ? {} : { body }),
        ...(to === undefined ? {} : { to }),
        ...(data === undefined ? {} : { data }),
      };
      // Taken, and marked on disk, before the entry is written: a write that fails costs a gap in
      // the seqs, never a seq used twice. Its entry may have been listed, and acknowledged by id,
      // between its rename and its removal, so a restart must not give the seq again either
      // (inbox.test.ts "a post whose write fails", ADR 0124 amended). A mark that cannot be written
      // refuses the post before any entry exists.
      await this.markSeq(workspaceId, seq);
      this.lastSeq.set(workspaceId, seq);
      const path = join(entriesDir, entryFile(seq, entry.id, to));
      try {
        await writeJsonAtomic(path, entry);
      } catch (error) {
        // The rename may have landed before its folder's flush failed: a post answered with an
        // error is not left in the inbox, where a retry would make it twice (as adr/0112). Undone,
        // it throws the flush's own error, not one saying it landed (ADR 0166).
        await rm(path, { force: true });
        throw error instanceof WrittenNotFlushed ? error.cause : error;
      }
      await this.keepWithinBound(workspaceId, entry);
      const summary = { id: entry.id, seq, source, severity: entry.severity, title: entry.title };
      this.events.publish(
        to === undefined
          ? { type: "notification.created", workspaceId, notification: summary }
          : { type: "notification.created", workspaceId, ownerId: to, notification: summary },
      );
      return entry;
    });
  }

  /** The entries `principalId` may see, newest first, a page at a time. */
  async page(workspaceId: string, principalId: string, query: InboxQuery = {}): Promise<InboxPage> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const before = query.cursor === undefined ? Number.POSITIVE_INFINITY : parseCursor(query.cursor);
    const acks = await this.acks.read(workspaceId, principalId);
    const names = (await this.readyNames(workspaceId))
      .filter((n) => n.seq < before && isVisibleTo(n, principalId))
      .reverse();
    const notifications: NotificationView[] = [];
    for (const name of names) {
      if (query.unacked && isAcked(acks, name.seq)) continue;
      const entry = await this.readEntry(workspaceId, name);
      if (!entry || !isVisibleTo(entry, principalId)) continue;
      if (notifications.length === limit) {
        // One more exists past the page: the cursor resumes below the last one returned.
        return { notifications, nextCursor: String(notifications[limit - 1]?.seq) };
      }
      notifications.push({ ...entry, acked: isAcked(acks, entry.seq) });
    }
    return { notifications };
  }

  async get(workspaceId: string, principalId: string, id: string): Promise<NotificationView> {
    const entry = await this.find(workspaceId, principalId, id);
    const acks = await this.acks.read(workspaceId, principalId);
    return { ...entry, acked: isAcked(acks, entry.seq) };
  }

  /**
   * Acknowledges entries for `principalId` alone: the ones named, or with `all` every one that
   * is stored now. Answers how many were newly acknowledged: of the named, or with `all` of the
   * entries the caller may see.
   */
  async ack(
    workspaceId: string,
    principalId: string,
    what: { ids: readonly string[] } | { all: true },
    access: AccessCheck,
  ): Promise<{ acked: number }> {
    if (!("all" in what)) {
      return this.acks.record(
        workspaceId,
        principalId,
        await this.seqsOf(workspaceId, principalId, what.ids),
        access,
      );
    }
    // Up to the newest entry stored, listed under the workspace's lock once the posts begun before
    // have ended; never up to the last seq given, which a post whose write failed took without
    // storing anything: a restart gives that seq again, and the entry that gets it was answered as
    // acknowledged before it was posted (inbox.test.ts "is not covered by an ack of all", ADR 0124).
    // Names carrying their addressee (upgraded if need be), so the count is of what the caller
    // may see, never of entries addressed to someone else.
    const names = await this.lock.run(workspaceId, async () => {
      await this.names.upgrade(workspaceId);
      return this.entryNames(workspaceId);
    });
    return this.acks.record(
      workspaceId,
      principalId,
      {
        upTo: names.at(-1)?.seq ?? 0,
        visible: names.filter((name) => isVisibleTo(name, principalId)).map((name) => name.seq),
      },
      access,
    );
  }

  /**
   * Retention: removes entries older than `retentionDays`, then the oldest past
   * `maxPerWorkspace`. Entries are in seq order, which is time order, so the oldest are read
   * only until one is young enough.
   */
  async prune(workspaceId: string): Promise<number> {
    return this.lock.run(workspaceId, async () => {
      await this.names.upgrade(workspaceId);
      const names = await this.entryNames(workspaceId);
      if (names.length === 0) return 0;
      const cutoffMs = this.clock() - this.settings.retentionDays * DAY_MS;
      let doomed = Math.max(0, names.length - this.settings.maxPerWorkspace);
      while (doomed < names.length) {
        const entry = await this.readEntry(workspaceId, names[doomed] as EntryName);
        if (entry && Date.parse(entry.receivedAt) >= cutoffMs) break;
        doomed += 1;
      }
      if (doomed === 0) return 0;
      // The highest seq given, not the newest entry's: a failed post's seq above it stays taken.
      await this.markSeq(workspaceId, await this.highestSeq(workspaceId));
      const dir = join(this.storage.dir(workspaceId), ENTRIES);
      for (const name of names.slice(0, doomed)) await rm(join(dir, name.file), { force: true });
      return doomed;
    });
  }

  /**
   * Holds the inbox to `maxPerWorkspace` as each entry is posted, not only at the hourly pass: a
   * member whose own failing task runs posted thousands between passes slowed everyone's reads.
   * What goes is the oldest entry for the same addressee as `posted` (everyone, or one person),
   * so one stream pays for its own growth and cannot push out entries meant for someone else;
   * an addressee with nothing older makes room with the oldest entry of the largest stream.
   */
  private async keepWithinBound(workspaceId: string, posted: Notification): Promise<void> {
    const names = await this.entryNames(workspaceId);
    let excess = names.length - this.settings.maxPerWorkspace;
    if (excess <= 0) return;
    const dir = join(this.storage.dir(workspaceId), ENTRIES);
    const streams = new Map<string | undefined, EntryName[]>();
    for (const name of names) {
      if (excess === 0) return;
      if (name.seq === posted.seq) continue;
      if (name.to === posted.to) {
        await rm(join(dir, name.file), { force: true });
        excess -= 1;
      } else {
        const stream = streams.get(name.to) ?? [];
        stream.push(name);
        streams.set(name.to, stream);
      }
    }
    const largest = [...streams.values()].sort((a, b) => b.length - a.length)[0] ?? [];
    for (const name of largest.slice(0, excess)) await rm(join(dir, name.file), { force: true });
  }

  /** R1 in the inbox's folders: a temp file is an entry, ack or mark write never acknowledged. */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (!present.has(this.storage.partition)) return;
    const dir = this.storage.dir(workspaceId);
    await sweepTempEntries(dir, pass);
    await sweepTempEntries(join(dir, ENTRIES), pass);
    await sweepTempEntries(join(dir, ACKS), pass);
  }

  /** `named` finds an entry's name by its id; by default it lists the folder for this one id. */
  private async find(
    workspaceId: string,
    principalId: string,
    id: string,
    named: (id: string) => Promise<EntryName | undefined> = async (wanted) =>
      (await this.readyNames(workspaceId)).find((n) => n.id === wanted),
  ): Promise<Notification> {
    const name = isNotificationId(id) ? await named(id) : undefined;
    const entry = name && isVisibleTo(name, principalId) && (await this.readEntry(workspaceId, name));
    if (!entry || !isVisibleTo(entry, principalId)) {
      throw new NotFound(
        "notification_not_found",
        `No notification ${JSON.stringify(id.slice(0, 40))} for you here.`,
      );
    }
    return entry;
  }

  /**
   * The highest seq given in the workspace, read from disk once per process; called under the
   * workspace's lock, so no post can give a seq between the listing and the memory being set.
   */
  private async highestSeq(workspaceId: string): Promise<number> {
    const known = this.lastSeq.get(workspaceId);
    if (known !== undefined) return known;
    const names = await this.entryNames(workspaceId);
    const mark = (await readJsonIfExists(join(this.storage.dir(workspaceId), SEQ_MARK))) as
      | { lastSeq?: number }
      | undefined;
    const highest = Math.max(names[names.length - 1]?.seq ?? 0, mark?.lastSeq ?? 0);
    this.lastSeq.set(workspaceId, highest);
    return highest;
  }

  private async markSeq(workspaceId: string, lastSeq: number): Promise<void> {
    await writeJsonAtomic(join(this.storage.dir(workspaceId), SEQ_MARK), { lastSeq });
  }

  /**
   * The seqs of the entries `ids` name, each found as `find` finds one, all from one listing of
   * the folder, and what that listing found: a listing per id cost an ack of 100 ids 8 s in an
   * inbox of 100,000 entries. The listing is made when the first well-formed id is looked up, and
   * an id held by two names is the first in seq order's, as a search of the listing finds it.
   */
  private async seqsOf(
    workspaceId: string,
    principalId: string,
    ids: readonly string[],
  ): Promise<{ seqs: number[]; listed: Listed }> {
    let listing: Promise<{ byId: Map<string, EntryName>; listed: Listed }> | undefined;
    const list = () => {
      listing ??= this.readyNames(workspaceId).then((names) => {
        const byId = new Map<string, EntryName>();
        for (const name of names) if (!byId.has(name.id)) byId.set(name.id, name);
        const listed = { seqs: new Set(names.map((name) => name.seq)), newest: names.at(-1)?.seq ?? 0 };
        return { byId, listed };
      });
      return listing;
    };
    const named = async (id: string) => (await list()).byId.get(id);
    const seqs = await Promise.all(
      ids.map(async (id) => (await this.find(workspaceId, principalId, id, named)).seq),
    );
    return { seqs, listed: (await list()).listed };
  }

  /**
   * The entry names of an inbox upgraded if it needs it: what a reader lists. An inbox nobody has
   * posted to has no names to upgrade, and its reads took the workspace's lock each time (ADR 0124
   * amended): it is listed without the lock, unless a post to it is in flight, which the read waits
   * for as it did behind the lock, so a read never misses a post begun before it
   * (inbox.test.ts "a read racing the first post").
   */
  private async readyNames(workspaceId: string): Promise<EntryName[]> {
    if (this.names.known(workspaceId)) return this.entryNames(workspaceId);
    if (!this.posting.has(workspaceId)) {
      const names = await this.entryNames(workspaceId);
      if (names.length === 0) return names;
    }
    await this.lock.run(workspaceId, () => this.names.upgrade(workspaceId));
    return this.entryNames(workspaceId);
  }

  /** The workspace's entries in seq order, from the folder listing alone. */
  private entryNames(workspaceId: string): Promise<EntryName[]> {
    return listEntryNames(join(this.storage.dir(workspaceId), ENTRIES));
  }

  /** An entry, or `undefined` when retention removed it between the listing and the read. */
  private async readEntry(workspaceId: string, name: EntryName): Promise<Notification | undefined> {
    try {
      const path = join(this.storage.dir(workspaceId), ENTRIES, name.file);
      return parseStoredJson(path, await readFile(path, "utf8")) as Notification;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  /** Creates one of the inbox's folders inside an existing workspace; never the workspace. */
  private async ensureDir(workspaceId: string, sub: string): Promise<string> {
    const dir = join(this.storage.dir(workspaceId), sub);
    await makeInPartition(dir, workspaceId);
    return dir;
  }
}

function parseCursor(cursor: string): number {
  if (!/^[1-9][0-9]{0,11}$/.test(cursor)) {
    throw new InvalidInput("That cursor is not one this inbox gave; list again from the start.");
  }
  return Number(cursor);
}
