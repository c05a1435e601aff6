import { eventText } from "./event-text.ts";
import { endsLineAt, foldLog } from "./log-file.ts";
import type { ConversationEvent } from "./model.ts";
import type { PartitionIndex } from "./partition-index.ts";

/**
 * A log's events are indexed as it is read, a batch of at most this many characters of text and
 * this many bytes of log at a time: a log read whole no longer holds all its events at once (a
 * 128 MiB log's are hundreds of MB of heap), and one apply per group cost a move of the partition's
 * order per group. Text alone held a 7 MB log of tool calls (little text) in one batch.
 */
const CATCH_UP_CHARS_PER_APPLY = 1024 * 1024;
const CATCH_UP_BYTES_PER_APPLY = 1024 * 1024;

/**
 * Reads the log of conversation `id` at `path` from where the index stops and applies what it
 * finds; a log gone is removed, and one whose lines no longer end where the index stops (edited on
 * disk) is indexed again from its start. Whether the index changed: not when all the log holds past
 * it is a torn line (a crash mid-append), which adds no event and is read again at every load.
 */
export async function catchUpLog(index: PartitionIndex, path: string, id: string): Promise<boolean> {
  const known = index.bytesOf(id);
  const covered = known ?? 0;
  try {
    const rewritten = covered > 0 && !(await endsLineAt(path, covered));
    if (rewritten) index.remove(id);
    const from = rewritten ? 0 : covered;
    // Applied a batch at a time as the groups are parsed, never all the log's events together
    // (conversation-indexes.test.ts "indexes a log as it reads it", "a megabyte of the log"),
    // inside the read's LARGE_READS slot: after it, every event would be held again (adr/0119).
    // A read that fails half-way fails the load or the update, which drops the partition.
    let batch: ConversationEvent[] = [];
    let batchStart = from;
    let chars = 0;
    let events = 0;
    const read = await foldLog(path, from, (start, group) => {
      if (chars >= CATCH_UP_CHARS_PER_APPLY || start - batchStart >= CATCH_UP_BYTES_PER_APPLY) {
        index.apply(id, batch, from);
        batch = [];
        batchStart = start;
        chars = 0;
      }
      for (const event of group) {
        events += 1;
        batch.push(event);
        chars += eventText(event).length;
      }
    });
    index.apply(id, batch, read.end);
    return rewritten || events > 0 || index.bytesOf(id) !== known;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    index.remove(id);
    return known !== undefined;
  }
}
