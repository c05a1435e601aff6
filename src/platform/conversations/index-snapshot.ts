import { open, readFile, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { syncDir, tempPathBeside } from "../../storage/atomic.ts";
import type { IndexLimits } from "./index-limits.ts";
import type { ConversationSummary } from "./model.ts";
import { PartitionIndex } from "./partition-index.ts";

/** One conversation as a snapshot holds it. */
export interface SnapshotConversation {
  ordinal: number;
  summary: ConversationSummary;
  bytes: number;
  postings: number;
  partial: boolean;
}

/**
 * What a whole snapshot holds, its last record: one cut at a line boundary lacks it, and one that
 * lost a line in between holds less than it says (adr/0144).
 */
export interface SnapshotTotals {
  conversations: number;
  /** Numbered events: slots, a removed conversation's included. */
  events: number;
  /** (word, event) postings, the sum of its conversations' `postings`. */
  postings: number;
}

/**
 * One record of a snapshot (written one per line): the generation of its events' numbers
 * (adr/0144), some conversations, some of those numbers' places, or some words' postings, both as
 * the little-endian float64 bytes of their numbers, base64, and last its totals. Each is small
 * enough to encode or parse without holding the event loop for long.
 */
export type SnapshotRecord =
  | { generation: string }
  | { conversations: SnapshotConversation[] }
  | { events: string }
  | { postings: Record<string, string> }
  | { end: SnapshotTotals };

/** The index's snapshot in each owner folder; never a log's name, so listing logs skips it. */
export const SNAPSHOT_FILE = "index.json";
/**
 * The version in the first line of a snapshot this code writes. Version 1 was one JSON document of
 * the whole index, parsed in one piece (seconds of a blocked event loop for a large one) and never
 * bounded; version 2 keyed postings by conversation and seq, not by event number; version 3 had no
 * end record, so one cut at a line boundary was read and searches missed the lost words
 * (adr/0144). None is read, and the logs rebuild the index (adr/0078).
 */
const VERSION = 4;
/** Longer than any first line this code writes: a longer one is not parsed. */
const MAX_HEADER_BYTES = 256;
const NEWLINE = 0x0a;

/** A snapshot's index, and the process that wrote it: none for a version 4 snapshot without it. */
export interface SnapshotRead {
  index: PartitionIndex;
  writer: string | undefined;
}

/**
 * Writes the index to `path` atomically (temp file, fsync, rename, fsync of the folder), one
 * record per line: each record is encoded and written on its own, so a large index gives the
 * event loop back between records instead of holding it for one JSON.stringify of everything.
 * The caller holds the partition's lock, so the index does not change meanwhile.
 */
/**
 * `writer` names the process writing it (ConversationIndexes' boot id), in the first line: added
 * there to version 4 compatibly, a snapshot without it being any other process's (adr/0144).
 */
export async function writeSnapshot(path: string, index: PartitionIndex, writer: string): Promise<void> {
  const temp = tempPathBeside(path);
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.write(`${JSON.stringify({ version: VERSION, writer })}\n`);
      for (const record of index.snapshotRecords()) await handle.write(`${JSON.stringify(record)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await syncDir(dirname(path));
}

/**
 * The index the snapshot at `path` holds: undefined when there is none, when it is not one this
 * code wrote, or when it is larger than a snapshot of an index within `limits` can be (its
 * bytes on disk are fewer than the index's estimate in memory). Each line is parsed on its own
 * turn of the event loop. A line that is not JSON throws a SyntaxError, and lines that end
 * before the end record or do not add up to it throw (PartitionIndex.fromSnapshot).
 */
export async function readSnapshot(path: string, limits: IndexLimits): Promise<SnapshotRead | undefined> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if (size > 2 * limits.partitionBytes) return undefined;
  const bytes = await readFile(path);
  const headerEnd = bytes.indexOf(NEWLINE);
  if (headerEnd < 0 || headerEnd > MAX_HEADER_BYTES) return undefined;
  const header = parseHeader(bytes.toString("utf8", 0, headerEnd));
  if (header?.version !== VERSION) return undefined;
  const index = await PartitionIndex.fromSnapshot(records(bytes, headerEnd + 1), limits);
  if (index === undefined) return undefined;
  return { index, writer: typeof header.writer === "string" ? header.writer : undefined };
}

function parseHeader(line: string): { version?: unknown; writer?: unknown } | undefined {
  try {
    const header: unknown = JSON.parse(line);
    return typeof header === "object" && header !== null ? header : undefined;
  } catch {
    return undefined;
  }
}

async function* records(bytes: Buffer, from: number): AsyncGenerator<unknown> {
  let start = from;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    // A snapshot is renamed into place whole: a line without its newline is not one we wrote.
    if (end < 0) throw new SyntaxError("conversation index snapshot ends mid-line");
    yield JSON.parse(bytes.toString("utf8", start, end));
    start = end + 1;
    await nextTurn();
  }
}
