import { EventNumbers, SEQ_SPAN } from "./event-numbers.ts";
import { addedBytes, EVENT_BYTES, wordBytes } from "./index-memory.ts";
import { keysOf } from "./postings.ts";

/** About this many characters of postings per snapshot record. */
const POSTINGS_CHARS_PER_RECORD = 256 * 1024;

/** Whether the conversation of an ordinal is still in the index. */
export type IsLive = (ordinal: number) => boolean;

/**
 * Each word's postings (adr/0046): the numbers of the events holding it (event-numbers.ts,
 * adr/0144), ascending, as numbers, not objects: a word's one posting is the number itself, more
 * are a flat array. A removed conversation's postings stay until `compact`.
 */
export class WordPostings {
  readonly lists = new Map<string, number | number[]>();
  readonly numbers = new EventNumbers();
  /** Numbered events of removed conversations, whose slots stay until `compact` renumbers. */
  deadSlots = 0;

  /** The ordinal of the conversation of the event numbered `key`. */
  ordinalOf(key: number): number {
    return Math.floor(this.numbers.placeOf(key) / SEQ_SPAN);
  }

  /**
   * Numbers the event of `seq` in the conversation of `ordinal`, the newest, and files it under
   * each of `words`; answers the estimated bytes this added.
   */
  add(ordinal: number, seq: number, words: readonly string[]): number {
    const key = this.numbers.add(ordinal * SEQ_SPAN + seq);
    let bytes = EVENT_BYTES;
    for (const word of words) {
      const value = this.lists.get(word);
      if (value === undefined) {
        this.lists.set(word, key);
        bytes += addedBytes(word, 0);
      } else if (typeof value === "number") {
        this.lists.set(word, [value, key]);
        bytes += addedBytes(word, 1);
      } else {
        bytes += addedBytes(word, value.length);
        value.push(key);
      }
    }
    return bytes;
  }

  /**
   * Drops the postings of removed conversations, and answers the estimated bytes left. Their
   * numbers' slots stay, so a cursor's numbers still mean the same events, until they are half of
   * all: then every event is numbered again, in the same order, under a new generation (adr/0144),
   * which keeps the slots within twice the live ones.
   */
  compact(isLive: IsLive): number {
    const renumbered =
      this.deadSlots > 0 && this.deadSlots * 2 >= this.numbers.next
        ? this.numbers.renumber(isLive)
        : undefined;
    if (renumbered) this.deadSlots = 0;
    let bytes = this.numbers.next * EVENT_BYTES;
    for (const [word, value] of this.lists) {
      const live: number[] = [];
      for (const key of keysOf(value)) {
        if (!renumbered) {
          if (isLive(this.ordinalOf(key))) live.push(key);
        } else if ((renumbered[key] as number) >= 0) live.push(renumbered[key] as number);
      }
      if (live.length === 0) {
        this.lists.delete(word);
        continue;
      }
      this.lists.set(word, live.length === 1 ? (live[0] as number) : live);
      bytes += wordBytes(word, live.length);
    }
    return bytes;
  }

  /**
   * Snapshot records: the numbers' slots, a removed conversation's too (a cursor given out names
   * events by their number), then the postings as the little-endian float64 bytes of their keys,
   * base64, without removed conversations' postings (there are some when `removed`), which an index
   * loaded from it could not count: left out word by word, not compacted away first in one turn
   * (adr/0084).
   */
  *records(
    isLive: IsLive,
    removed: boolean,
  ): Generator<{ events: string } | { postings: Record<string, string> }> {
    yield* this.numbers.records();
    let chunk: Record<string, string> = {};
    let chars = 0;
    for (const [word, value] of this.lists) {
      const keys = removed ? keysOf(value).filter((key) => isLive(this.ordinalOf(key))) : keysOf(value);
      if (keys.length === 0) continue;
      const encoded = Buffer.from(Float64Array.from(keys).buffer).toString("base64");
      chunk[word] = encoded;
      chars += word.length + encoded.length;
      if (chars >= POSTINGS_CHARS_PER_RECORD) {
        yield { postings: chunk };
        chunk = {};
        chars = 0;
      }
    }
    if (chars > 0) yield { postings: chunk };
  }

  /**
   * Adds one postings record, after every events record; answers the estimated bytes it added, or
   * undefined when it is not one `records` wrote. `charge` is called with what `add` charged each
   * posting's conversation (keys are in the order they were added), not only its postings' 12
   * bytes: a removal counts what it frees, which decides when a partition at its budget makes room
   * for new words again (adr/0084).
   */
  restore(postings: unknown, charge: (ordinal: number, bytes: number) => void): number | undefined {
    if (typeof postings !== "object" || postings === null || Array.isArray(postings)) return undefined;
    let bytes = 0;
    for (const [word, encoded] of Object.entries(postings)) {
      const raw = Buffer.from(String(encoded), "base64");
      if (raw.length === 0 || raw.length % 8 !== 0) return undefined;
      const keys = new Array<number>(raw.length / 8);
      for (let i = 0; i < keys.length; i++) {
        const key = raw.readDoubleLE(i * 8);
        // A search finds its bounds by a binary search: each list holds numbered events, ascending.
        const before = i === 0 ? -1 : (keys[i - 1] as number);
        if (!Number.isSafeInteger(key) || key <= before || key >= this.numbers.next) return undefined;
        keys[i] = key;
      }
      this.lists.set(word, keys.length === 1 ? (keys[0] as number) : keys);
      bytes += wordBytes(word, keys.length);
      for (const [at, key] of keys.entries()) charge(this.ordinalOf(key), addedBytes(word, at));
    }
    return bytes;
  }
}
