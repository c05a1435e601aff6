import { type FileHandle, open, stat } from "node:fs/promises";
import { setImmediate as nextTurn } from "node:timers/promises";
import { Conflict } from "../../errors.ts";
import { Slots } from "../../kernel/slots.ts";
import { createFileExclusive } from "../../storage/exclusive.ts";
import { wroteWhole } from "../../storage/short-write.ts";
import { type ConversationEvent, parseEventLine } from "./model.ts";

const NEWLINE = 0x0a;
/** A read of more than this holds one of LARGE_READS' slots while it holds the bytes. */
const LARGE_READ_BYTES = 1024 * 1024;
/**
 * Whole-log reads of large logs at once, process-wide. A 16 MiB log is ≈ 150 ms of parsing and
 * tens of megabytes of events: 64 read at once held 3.25 GB and the loop for 9.7 s.
 */
const LARGE_READS = new Slots(2);
/** Text parsed between two turns of the event loop, so one read never holds it for long. */
const PARSE_TURN_BYTES = 1024 * 1024;

/** What a read of a log found from some byte on. */
export interface LogRead {
  events: ConversationEvent[];
  /** The byte just after the last whole append: where the next append goes. */
  end: number;
  /** The file's size; past `end` it ends with an append a crash cut short (a torn line, or some
   * of its lines). Below `from`, the log was rewritten shorter since whoever asked last read it. */
  size: number;
  /** The file as it was read (`stampOf`): a writer keeping `end` checks it is still this file. */
  stamp: string;
}

/**
 * Size, modification and change times and inode: what changes when anyone but the writer holding
 * `end` edits or replaces the log (an operator's repair), so that writer knows `end` is no longer
 * true. The change time is there because nothing can set it: a backup of the same size restored
 * with its modification time kept (`rm`, then `cp -p`) can even land on the freed inode.
 */
export function stampOf(stats: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}:${stats.ino}`;
}

/**
 * Whether a line ends just before byte `offset`: false when the log was rewritten so that
 * `offset` is no longer between two lines (or is past its end). ENOENT when it is gone.
 */
export async function endsLineAt(path: string, offset: number): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const byte = Buffer.alloc(1);
    const { bytesRead } = await handle.read(byte, 0, 1, offset - 1);
    return bytesRead === 1 && byte[0] === NEWLINE;
  } finally {
    await handle.close();
  }
}

/** The log's stamp now; ENOENT when it is gone. */
export async function logStamp(path: string): Promise<string> {
  return stampOf(await stat(path));
}

/**
 * A conversation's log is JSON lines, appended and never rewritten (adr/0047). An append of
 * several events is one group: each of its lines carries `through`, the seq of its last event,
 * and the group counts only once that last line is whole. A group cut short (a crash in the
 * middle of its write, or a read while it is being written) is skipped whole, so an append is
 * seen all or not at all; so is a torn last line (no newline). The next append cuts either off.
 * A whole line that is not an event is skipped too, so one bad line never breaks the rest.
 */
export async function readLog(path: string, from = 0): Promise<LogRead> {
  const events: ConversationEvent[] = [];
  const read = await foldLog(path, from, (_start, group) => {
    for (const event of group) events.push(event);
  });
  return { events, ...read };
}

/**
 * What readLog reads, told to `groups` one group at a time and kept by nobody here: a head needs
 * a fold of every event (its summary, its offsets), not the events, and holding all of a large
 * log's events doubled the CPU of its first page (adr/0119).
 */
export async function foldLog(
  path: string,
  from: number,
  groups: GroupSink,
): Promise<Omit<LogRead, "events">> {
  const handle = await open(path, "r");
  try {
    const stats = await handle.stat();
    const end = await readBounded(handle, from, Math.max(0, stats.size - from), groups);
    return { end: from + end, size: stats.size, stamp: stampOf(stats) };
  } finally {
    await handle.close();
  }
}

/**
 * The events of the whole groups between bytes `from` and `to`, both where a group starts (or the
 * end of the last whole one), if the log is still the file `stamp` describes: undefined when it
 * was edited, replaced or appended to since. The stamp is the open file's, so the bytes read are
 * the bytes it describes (adr/0096).
 */
export async function readSpan(
  path: string,
  stamp: string,
  from: number,
  to: number,
): Promise<ConversationEvent[] | undefined> {
  const handle = await open(path, "r");
  try {
    if (stampOf(await handle.stat()) !== stamp) return undefined;
    const events: ConversationEvent[] = [];
    await readBounded(handle, from, to - from, (_start, group) => {
      for (const event of group) events.push(event);
    });
    return events;
  } finally {
    await handle.close();
  }
}

/** Told of each whole group a read finds, in log order: the byte its first line starts at, and its events. */
export type GroupSink = (start: number, group: readonly ConversationEvent[]) => void;

/** readGroups, holding one of LARGE_READS' slots when it reads more than LARGE_READ_BYTES. */
async function readBounded(
  handle: FileHandle,
  from: number,
  length: number,
  groups: GroupSink,
): Promise<number> {
  const read = () => readGroups(handle, from, length, groups);
  return length > LARGE_READ_BYTES ? LARGE_READS.run(read) : read();
}

/** Tells `groups` of the whole groups in `length` bytes from `from`; the offset just after the last one. */
async function readGroups(
  handle: FileHandle,
  from: number,
  length: number,
  groups: GroupSink,
): Promise<number> {
  const bytes = Buffer.alloc(length);
  const { bytesRead } = length > 0 ? await handle.read(bytes, 0, length, from) : { bytesRead: 0 };
  /** The lines read so far of a group whose last line is not yet read, and that line's seq. */
  let group: ConversationEvent[] = [];
  let groupThrough: unknown;
  /** Where the open group's first line starts: a reader starting there reads the same group. */
  let groupStart = 0;
  let start = 0;
  let end = 0;
  let turnStart = 0;
  // Newlines found by indexOf, not a loop over every byte: 1 ms rather than 9 for 20 MB (adr/0119).
  for (let i = bytes.indexOf(NEWLINE); i >= 0 && i < bytesRead; i = bytes.indexOf(NEWLINE, start)) {
    const lineStart = start;
    const event = parseEventLine(bytes.toString("utf8", start, i));
    start = i + 1;
    if (event) {
      const through = takeThrough(event);
      // A line of another append while a group is open: that group was cut short (only a hand
      // edit puts lines after one; an append cuts it off first) and is never seen.
      if (group.length > 0 && through !== groupThrough) group = [];
      if (group.length === 0) groupStart = lineStart;
      group.push(event);
      if (typeof through === "number" && through > event.seq) groupThrough = through;
      else {
        groups(from + groupStart, group);
        group = [];
      }
    }
    // A line that is not an event ends nothing: inside a group it is skipped with the group.
    if (group.length === 0) end = start;
    if (start - turnStart >= PARSE_TURN_BYTES) {
      turnStart = start;
      await nextTurn();
    }
  }
  return end;
}

/** The `through` a line of a group carries, taken off its event. */
function takeThrough(event: ConversationEvent): unknown {
  const line = event as ConversationEvent & { through?: unknown };
  if (line.through === undefined) return undefined;
  const { through } = line;
  delete line.through;
  return through;
}

/**
 * The bytes of an append's events, one line each ended by its newline; when there are several,
 * each line carries `through`, the last one's seq, so a reader sees them together or not at all.
 */
export function appendLines(events: readonly ConversationEvent[]): Buffer[] {
  const through = events.length > 1 ? events[events.length - 1]?.seq : undefined;
  if (through === undefined) return eventLines(events);
  return events.map((event) => Buffer.from(`${JSON.stringify({ ...event, through })}\n`, "utf8"));
}

/**
 * Writes `lines` at byte `end` (the end of the last whole line) and flushes them before
 * returning the log's new stamp. A torn tail past `end` is cut off first: that is the repair,
 * and it removes only bytes whose append was never acknowledged. A log shorter than `end` was
 * changed by someone else since `end` was read: nothing is written (the caller reads it again).
 * A write or flush that fails is cut off again, so the error it answers means "not stored"
 * (adr/0116); so is a write that stored only some of the bytes (`ShortWrite`: the disk filled
 * during it), which would otherwise leave a torn line acknowledged as stored. The caller holds
 * the conversation's lock.
 */
export async function appendLog(path: string, end: number, lines: Buffer): Promise<string> {
  const handle = await open(path, "r+");
  try {
    const { size } = await handle.stat();
    if (size < end) throw logChanged();
    if (size !== end) await handle.truncate(end);
    try {
      const { bytesWritten } = await handle.write(lines, 0, lines.length, end);
      wroteWhole(bytesWritten, lines.length);
      await handle.sync();
    } catch (error) {
      // Unflushed, the append may be lost to a power loss after the caller was told it is stored,
      // and kept, a retry after the error stores it twice: cut off and the cut flushed, never the
      // flush retried (a failed fsync may report success next time without writing: adr/0112).
      // If the cut fails too, the disk refuses every change: the error is answered all the same,
      // and the caller forgets where the log ends, to read it again (flush-failure.test.ts).
      await handle
        .truncate(end)
        .then(() => handle.sync())
        .catch(() => undefined);
      throw error;
    }
    return stampOf(await handle.stat());
  } finally {
    await handle.close();
  }
}

/**
 * A log shorter than its writer last read (edited on disk between the writer's check and this
 * write): the append is refused, never written past a hole; the writer reads the log again.
 */
function logChanged(): Conflict {
  return new Conflict(
    "conversation_changed",
    "The conversation changed on disk while appending; append again.",
  );
}

/** Creates a log holding `lines` whole, or says it exists (ids are random: that is a bug, not a race). */
export async function createLog(path: string, lines: Buffer): Promise<boolean> {
  return createFileExclusive(path, lines.toString("utf8"));
}

/** Events as the bytes of their lines, each ended by its newline (a new log: written whole). */
export function eventLines(events: readonly ConversationEvent[]): Buffer[] {
  return events.map((event) => Buffer.from(`${JSON.stringify(event)}\n`, "utf8"));
}
