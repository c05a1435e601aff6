import { randomBytes } from "node:crypto";
import { MAX_EVENT_SEQ } from "./limits.ts";

/**
 * An event's place in one conversation: the conversation's ordinal in its partition's index times
 * SEQ_SPAN plus the event's seq. Appends number no event past MAX_EVENT_SEQ (limits.ts;
 * maxConversationBytes is at most 128 MiB), an event an operator numbered past it is not indexed,
 * and an ordinal below 2^32 keeps every place an exact integer (below 2^53).
 */
export const SEQ_SPAN = MAX_EVENT_SEQ + 1;

/** How many slots one events record of a snapshot holds: about 256 KiB of base64. */
const SLOTS_PER_RECORD = 24 * 1024;

/**
 * The number of each indexed event in the order the index indexed it (adr/0144): a word's postings
 * are these numbers, so every list is sorted and one number is a place in each of them, found by a
 * binary search whether or not the list holds it, and whether or not its event is still live. A
 * slot keeps its event's place (SEQ_SPAN) after its conversation is removed, so numbers never move;
 * `renumber` packs them, and renews the generation, when removed events fill half the slots.
 * Numbers hold within one `generation`, kept by a snapshot; an index built or caught up from the
 * logs numbers their events anew under a new generation, and a cursor of another is refused.
 */
export class EventNumbers {
  private slots: number[] = [];
  generation = newGeneration();

  /** The number the next event indexed gets: every event numbered so far is below it. */
  get next(): number {
    return this.slots.length;
  }

  /** Numbers an event at `place` (ordinal × SEQ_SPAN + seq), the newest so far. */
  add(place: number): number {
    this.slots.push(place);
    return this.slots.length - 1;
  }

  /** The place of event `number`: its conversation's ordinal × SEQ_SPAN + its seq. */
  placeOf(number: number): number {
    return this.slots[number] as number;
  }

  /** Calls `visit` on each slot's place, in number order. */
  forEach(visit: (place: number) => void): void {
    for (const place of this.slots) visit(place);
  }

  /** Gives this numbering a new generation: the events it numbers may no longer be those an older cursor meant. */
  renew(): void {
    this.generation = newGeneration();
  }

  /** Takes the generation a snapshot holds; false when it is not one `newGeneration` made. */
  restoreGeneration(value: unknown): boolean {
    if (!isGeneration(value)) return false;
    this.generation = value;
    return true;
  }

  /**
   * Drops the slots of conversations `isLive` says are gone and numbers the rest again, in the same
   * order, under a new generation; answers each old number's new one (-1 for a dropped slot), an
   * order-keeping map, so a list of numbers mapped by it stays sorted.
   */
  renumber(isLive: (ordinal: number) => boolean): Int32Array | Float64Array {
    const map =
      this.slots.length < 2 ** 31 ? new Int32Array(this.slots.length) : new Float64Array(this.slots.length);
    const kept: number[] = [];
    this.slots.forEach((place, number) => {
      if (isLive(Math.floor(place / SEQ_SPAN))) {
        map[number] = kept.length;
        kept.push(place);
      } else map[number] = -1;
    });
    this.slots = kept;
    this.renew();
    return map;
  }

  /** The slots as records of a snapshot, as the little-endian float64 bytes of their places, base64. */
  *records(): Generator<{ events: string }> {
    for (let at = 0; at < this.slots.length; at += SLOTS_PER_RECORD) {
      const chunk = Float64Array.from(this.slots.slice(at, at + SLOTS_PER_RECORD));
      yield { events: Buffer.from(chunk.buffer).toString("base64") };
    }
  }

  /** Adds the slots of one events record, after those before it; false when it is not one `records` wrote. */
  restore(encoded: unknown): boolean {
    if (typeof encoded !== "string") return false;
    const raw = Buffer.from(encoded, "base64");
    if (raw.length === 0 || raw.length % 8 !== 0) return false;
    for (let i = 0; i < raw.length; i += 8) {
      const place = raw.readDoubleLE(i);
      if (!Number.isSafeInteger(place) || place < 0 || place % SEQ_SPAN === 0) return false;
      this.slots.push(place);
    }
    return true;
  }
}

/** Whether `value` is a generation `newGeneration` could have made: a cursor's is checked so. */
export function isGeneration(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{12}$/.test(value);
}

/** An opaque token naming one numbering of a partition's events. */
function newGeneration(): string {
  return randomBytes(9).toString("base64url");
}
