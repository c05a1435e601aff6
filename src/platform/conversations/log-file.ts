import { open, stat } from "node:fs/promises";
import { Conflict } from "../../errors.ts";
import { createFileExclusive } from "../../storage/exclusive.ts";
import { type ConversationEvent, parseEventLine } from "./model.ts";

const NEWLINE = 0x0a;

/** What a read of a log found from some byte on. */
export interface LogRead {
  events: ConversationEvent[];
  /** The byte just after the last whole line: where the next append goes. */
  end: number;
  /** The file's size; past `end` it ends with a torn line (a crash mid-append). Below `from`,
   * the log was rewritten shorter since whoever asked last read it. */
  size: number;
  /** The file as it was read (`stampOf`): a writer keeping `end` checks it is still this file. */
  stamp: string;
}

/**
 * Size, modification time and inode: what changes when anyone but the writer holding `end` edits
 * or replaces the log (an operator's repair), so that writer knows `end` is no longer true.
 */
export function stampOf(stats: { size: number; mtimeMs: number; ino: number }): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ino}`;
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
 * A conversation's log is JSON lines, appended and never rewritten (adr/0047). A line is whole
 * only when its newline is there: a last line without one is torn — its append was never
 * acknowledged — and is skipped here, never parsed as an event; the next append cuts it off.
 * A whole line that is not an event is skipped too, so one bad line never breaks the rest.
 */
export async function readLog(path: string, from = 0): Promise<LogRead> {
  const handle = await open(path, "r");
  try {
    const stats = await handle.stat();
    const { size } = stats;
    const bytes = Buffer.alloc(Math.max(0, size - from));
    const { bytesRead } =
      bytes.length > 0 ? await handle.read(bytes, 0, bytes.length, from) : { bytesRead: 0 };
    const events: ConversationEvent[] = [];
    let start = 0;
    for (let i = 0; i < bytesRead; i++) {
      if (bytes[i] !== NEWLINE) continue;
      const event = parseEventLine(bytes.toString("utf8", start, i));
      if (event) events.push(event);
      start = i + 1;
    }
    return { events, end: from + start, size, stamp: stampOf(stats) };
  } finally {
    await handle.close();
  }
}

/**
 * Writes `lines` at byte `end` (the end of the last whole line) and flushes them before
 * returning the log's new stamp. A torn tail past `end` is cut off first: that is the repair,
 * and it removes only bytes whose append was never acknowledged. A log shorter than `end` was
 * changed by someone else since `end` was read: nothing is written (the caller reads it again).
 * The caller holds the conversation's lock.
 */
export async function appendLog(path: string, end: number, lines: Buffer): Promise<string> {
  const handle = await open(path, "r+");
  try {
    const { size } = await handle.stat();
    if (size < end) throw logChanged();
    if (size !== end) await handle.truncate(end);
    await handle.write(lines, 0, lines.length, end);
    await handle.sync();
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

/** Events as the bytes of their lines, each ended by its newline. */
export function eventLines(events: readonly ConversationEvent[]): Buffer[] {
  return events.map((event) => Buffer.from(`${JSON.stringify(event)}\n`, "utf8"));
}
