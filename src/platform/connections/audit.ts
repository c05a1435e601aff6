import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { InvalidInput } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import { systemTimers, type Timers } from "../../kernel/timers.ts";
import { createLogger, type Logger } from "../../log.ts";
import { namesIn } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type AuditEntry, type AuditRecord, checkAuditRecord, shownEntry } from "./audit-entry.ts";
import { AuditFile } from "./audit-file.ts";

export type { AuditEntry, AuditRecord } from "./audit-entry.ts";

const AUDIT = "audit";
const DAY_FILE = /^([0-9]{4}-[0-9]{2}-[0-9]{2})\.jsonl$/;
// Opaque to callers: the day file and byte offset of the last entry returned, and its seq.
const CURSOR = /^([0-9]{4}-[0-9]{2}-[0-9]{2})\.([0-9]{1,15})\.([1-9][0-9]{0,14})$/;
const NEWLINE = 0x0a;
const READ_CHUNK_BYTES = 64 * 1024;
export const DEFAULT_AUDIT_PAGE = 100;
export const MAX_AUDIT_PAGE = 500;

export interface AuditPage {
  /** Newest first. */
  entries: AuditEntry[];
  /** Pass back as `cursor` for the next (older) page; absent on the last one. */
  nextCursor?: string;
}

export interface AuditQuery {
  cursor?: string | undefined;
  /** 1–500, default 100. */
  limit?: number | undefined;
}

/** Where the ledger of one workspace stands: its last seq and time, read once per process. */
interface Head {
  seq: number;
  atMs: number;
}

/**
 * A workspace's audit ledger of calls to its connections: `<ws>/connections/audit/<YYYY-MM-DD>.jsonl`,
 * one JSON line per entry in the file of the entry's UTC day. Append-only: nothing rewrites or
 * removes a line (adr/0037).
 *
 * Appends to one workspace are serialised (a keyed lock), each written to the day file at once and
 * flushed to the disk within a second with the lines written meanwhile (audit-file.ts), so the lines are in seq order and `at` never goes backwards (a clock stepped back stamps
 * the previous time again): the day files, by name, are in seq order too. After a restart the next
 * seq is one past the highest in the newest file holding an entry, read from its end.
 *
 * A crash mid-append leaves a torn last line, and so does a disk that fills during one (that append
 * is refused). Readers skip any line that is not a whole entry, and the next append starts on a
 * new line, so a torn line costs that one unacknowledged entry and nothing after it. There are no
 * temp files, so nothing for recovery to sweep.
 */
export class AuditLedger {
  private readonly lock = new KeyedLock();
  private readonly heads = new Map<string, Head>();
  private readonly files = new Map<string, AuditFile>();
  /** Workspaces whose ledger folder exists: made once, not on every append. */
  private readonly ready = new Set<string>();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly clock: Clock,
    private readonly timers: Timers = systemTimers,
    private readonly log: Logger = createLogger("silent"),
  ) {}

  /** Records one entry; the ledger stamps `seq` and `at`. Refuses a record with any other field. */
  async append(workspaceId: string, record: AuditRecord): Promise<AuditEntry> {
    return (await this.appendAll(workspaceId, [record]))[0] as AuditEntry;
  }

  /**
   * Records entries in order, with consecutive seqs, in one write. All are checked first, so a
   * refused record writes none.
   */
  private async appendAll(workspaceId: string, records: readonly AuditRecord[]): Promise<AuditEntry[]> {
    const checked = records.map(checkAuditRecord);
    let written: AuditEntry[] | undefined;
    try {
      written = this.appendNow(workspaceId, checked);
    } catch (error) {
      await this.forgetState(workspaceId);
      throw error;
    }
    return written ?? this.appendQueued(workspaceId, checked);
  }

  /**
   * The common case without a wait: nothing else is writing this ledger, its head and folder are
   * known and today's file is open, so the entries are stamped and written synchronously. Anything
   * else goes through the queue (`undefined`). A write that fails throws, with the state as it was
   * before it, for the caller to forget at once.
   */
  private appendNow(workspaceId: string, checked: AuditRecord[]): AuditEntry[] | undefined {
    const head = this.heads.get(workspaceId);
    const file = this.files.get(workspaceId);
    if (!head || !file || !this.ready.has(workspaceId) || !this.lock.isIdle(workspaceId)) return undefined;
    const stamped = this.stamp(head, checked);
    const path = join(this.storage.dir(workspaceId), AUDIT, `${dayOf(stamped.at)}.jsonl`);
    if (!file.appendNow(path, lines(stamped.entries))) return undefined;
    this.heads.set(workspaceId, stamped.head);
    return stamped.entries;
  }

  private async appendQueued(workspaceId: string, checked: AuditRecord[]): Promise<AuditEntry[]> {
    return this.lock.run(workspaceId, async () => {
      const dir = await this.ensureAuditDir(workspaceId);
      const stamped = this.stamp(await this.head(workspaceId), checked);
      try {
        await this.fileOf(workspaceId).append(
          join(dir, `${dayOf(stamped.at)}.jsonl`),
          lines(stamped.entries),
        );
      } catch (error) {
        await this.forgetState(workspaceId);
        throw error;
      }
      this.heads.set(workspaceId, stamped.head);
      return stamped.entries;
    });
  }

  /** Consecutive seqs after `head`, one time for all, never before the last entry's time. */
  private stamp(head: Head, checked: AuditRecord[]): { entries: AuditEntry[]; at: string; head: Head } {
    const atMs = Math.max(this.clock(), head.atMs);
    const at = new Date(atMs).toISOString();
    const entries = checked.map((record, i): AuditEntry => ({ seq: head.seq + 1 + i, at, ...record }));
    return { entries, at, head: { seq: head.seq + entries.length, atMs } };
  }

  /**
   * After a failed write or flush how much reached the disk is unknown: the head is read again and
   * the day file opened again next time, that open starting on a new line after a torn one. The
   * file open now is flushed (its lines before the failure were acknowledged) and closed, so no
   * descriptor is left behind; a failure of that flush is logged. The forgetting is done before
   * the first await, so no append in between writes through the state forgotten.
   */
  private async forgetState(workspaceId: string): Promise<void> {
    const file = this.files.get(workspaceId);
    this.heads.delete(workspaceId);
    this.files.delete(workspaceId);
    await file?.flush().catch((error: unknown) => this.flushFailed(workspaceId, error));
  }

  /**
   * The flush a day file falls due for, in turn with the workspace's appends. No caller waits for
   * it, so its failure (EIO from a failing disk; ENOSPC or EDQUOT from a filesystem that allocates
   * only when it writes back) is logged here, never thrown: an unhandled rejection would end the
   * process. The ledger's state is forgotten, so the next append reads the head and reopens the file.
   */
  private async flushDue(workspaceId: string, file: AuditFile): Promise<void> {
    await this.lock.run(workspaceId, async () => {
      try {
        await file.flush();
      } catch (error) {
        this.flushFailed(workspaceId, error);
        if (this.files.get(workspaceId) === file) await this.forgetState(workspaceId);
      }
    });
  }

  /** Tells the operator that entries already acknowledged may not survive a power loss. */
  private flushFailed(workspaceId: string, error: unknown): void {
    this.log.error(
      { workspaceId, err: error },
      "audit ledger: a day file's flush failed; the entries written to it since its last flush (up to a second's) may be lost to a power loss",
    );
  }

  /** Entries newest first, a page at a time. A bad cursor or limit is `InvalidInput`. */
  async page(workspaceId: string, query: AuditQuery = {}): Promise<AuditPage> {
    const limit = checkLimit(query.limit);
    const cursor = query.cursor === undefined ? undefined : parseCursor(query.cursor);
    const dir = join(this.storage.dir(workspaceId), AUDIT);
    const days = (await dayFiles(dir)).filter((day) => cursor === undefined || day <= cursor.day);
    const entries: AuditEntry[] = [];
    const places: string[] = [];
    for (const day of days.reverse()) {
      const end = cursor?.day === day ? cursor.offset : undefined;
      for await (const { line, start } of linesBackward(join(dir, `${day}.jsonl`), end)) {
        const entry = parseEntry(line);
        if (!entry || (cursor !== undefined && entry.seq >= cursor.seq)) continue;
        if (entries.length === limit) return { entries, nextCursor: places[limit - 1] as string };
        entries.push(shownEntry(entry));
        places.push(`${day}.${start}.${entry.seq}`);
      }
    }
    return { entries };
  }

  private async head(workspaceId: string): Promise<Head> {
    const known = this.heads.get(workspaceId);
    if (known) return known;
    const dir = join(this.storage.dir(workspaceId), AUDIT);
    let head: Head = { seq: 0, atMs: 0 };
    // The newest file normally ends with the newest entry; one holding only a torn line (a crash
    // on a day's first append) sends the search to the day before.
    search: for (const day of (await dayFiles(dir)).reverse()) {
      for await (const { line } of linesBackward(join(dir, `${day}.jsonl`))) {
        const entry = parseEntry(line);
        if (entry) {
          head = { seq: entry.seq, atMs: Date.parse(entry.at) };
          break search;
        }
      }
    }
    this.heads.set(workspaceId, head);
    return head;
  }

  /** Flushes every open day file to the disk now (a clean stop, a test). */
  async flush(): Promise<void> {
    await Promise.all([...this.files].map(([ws, file]) => this.lock.run(ws, () => file.flush())));
  }

  private fileOf(workspaceId: string): AuditFile {
    let file = this.files.get(workspaceId);
    if (!file) {
      const created: AuditFile = new AuditFile(this.timers, () => void this.flushDue(workspaceId, created));
      file = created;
      this.files.set(workspaceId, file);
    }
    return file;
  }

  /** Creates the ledger's folders inside an existing workspace; never creates the workspace. */
  private async ensureAuditDir(workspaceId: string): Promise<string> {
    const dir = this.storage.dir(workspaceId);
    if (this.ready.has(workspaceId)) return join(dir, AUDIT);
    await makeInPartition(join(dir, AUDIT), workspaceId);
    this.ready.add(workspaceId);
    return join(dir, AUDIT);
  }
}

/** The day files of a ledger folder, oldest first; none when the folder does not exist. */
async function dayFiles(dir: string): Promise<string[]> {
  const names = await namesIn(dir);
  return names.flatMap((name) => DAY_FILE.exec(name)?.[1] ?? []).sort();
}

/**
 * The lines of `path` that end before byte `end` (the whole file when not given), last first,
 * each with the byte offset it starts at. Reads a chunk at a time from the end, so a page costs
 * what it returns, not the size of the day. A final line without its newline is yielded too; the
 * caller's parse decides whether it is whole.
 */
async function* linesBackward(
  path: string,
  end?: number,
): AsyncGenerator<{ line: string; start: number }, void, undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    let pos = Math.min(end ?? Number.POSITIVE_INFINITY, (await handle.stat()).size);
    // Bytes of the line that begins before `pos` and that the chunks read so far end with.
    let carry = Buffer.alloc(0);
    while (pos > 0) {
      const from = Math.max(0, pos - READ_CHUNK_BYTES);
      const chunk = Buffer.alloc(pos - from);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, from);
      const bytes = Buffer.concat([chunk.subarray(0, bytesRead), carry]);
      pos = from;
      let lineEnd = bytes.length;
      for (let i = bytes.length - 1; i >= 0; i--) {
        if (bytes[i] !== NEWLINE) continue;
        if (lineEnd > i + 1) yield { line: bytes.toString("utf8", i + 1, lineEnd), start: from + i + 1 };
        lineEnd = i;
      }
      carry = bytes.subarray(0, lineEnd);
      if (pos === 0 && carry.length > 0) yield { line: carry.toString("utf8"), start: 0 };
    }
  } finally {
    await handle.close();
  }
}

/** A line's entry, or `undefined` for a torn or foreign line. */
function parseEntry(line: string): AuditEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const entry = value as Partial<AuditEntry> | null;
  if (typeof entry !== "object" || entry === null) return undefined;
  if (!Number.isSafeInteger(entry.seq) || (entry.seq as number) < 1) return undefined;
  if (typeof entry.at !== "string" || Number.isNaN(Date.parse(entry.at))) return undefined;
  return entry as AuditEntry;
}

function lines(entries: readonly AuditEntry[]): string {
  return entries.map((entry) => `${JSON.stringify(entry)}\n`).join("");
}

function dayOf(iso: string): string {
  return iso.slice(0, 10);
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_AUDIT_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_PAGE) {
    throw new InvalidInput(`limit is a whole number from 1 to ${MAX_AUDIT_PAGE}.`);
  }
  return limit;
}

function parseCursor(cursor: string): { day: string; offset: number; seq: number } {
  const match = CURSOR.exec(cursor);
  if (!match) {
    throw new InvalidInput("That cursor is not one this ledger gave; page again from the start.");
  }
  return { day: match[1] as string, offset: Number(match[2]), seq: Number(match[3]) };
}
