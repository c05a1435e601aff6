import { isWithin } from "../../kernel/clock.ts";
import type { PartitionIndex } from "./partition-index.ts";

/** Partitions whose index is kept in memory at most; the least recently used is saved and dropped. */
const MAX_LOADED_PARTITIONS = 100;
/**
 * The estimated bytes of every partition's index together (adr/0078): past it, the least recently
 * used are saved and dropped, never the one in use. One partition stops growing at its own budget
 * (INDEX_LIMITS.partitionBytes), so the total stays near this.
 */
export const MAX_LOADED_INDEX_BYTES = 256 * 1024 * 1024;
/**
 * A partition unused this long is saved and dropped: the idle period of the file index and of a
 * workspace's sources (FILE_INDEX_IDLE_MS, IDLE_EVICT_MS), so an idle instance pays disk, not memory.
 */
export const CONVERSATION_INDEX_IDLE_MS = 10 * 60 * 1000;

/** What bounds the indexes in memory; the defaults are MAX_LOADED_INDEX_BYTES and CONVERSATION_INDEX_IDLE_MS. */
export interface ResidencyOptions {
  maxLoadedBytes?: number;
  idleMs?: number;
}

/** A partition's index in memory, and when it was last used. */
export interface Loaded {
  index: PartitionIndex;
  lastUsed: number;
  /**
   * The numbering (PartitionIndex.numbering) of the snapshot this instance last wrote of it, or
   * loaded it from and kept the generation of.
   */
  saved?: string;
}

/**
 * The partition indexes in memory, least recently used first, and which of them to drop: those
 * past MAX_LOADED_PARTITIONS or the byte budget (adr/0078), and those unused for the idle time.
 * What a drop does is the caller's (ConversationIndexes); this tells it which, and counts a
 * partition whose drop is under way no longer against the budget.
 */
export class LoadedPartitions {
  private readonly loaded = new Map<string, Loaded>();
  /** Partitions whose drop is queued behind their lock: no longer counted against the budget. */
  private readonly dropping = new Set<string>();

  private readonly maxBytes: number;
  readonly idleMs: number;

  constructor(options: ResidencyOptions = {}) {
    this.maxBytes = options.maxLoadedBytes ?? MAX_LOADED_INDEX_BYTES;
    this.idleMs = options.idleMs ?? CONVERSATION_INDEX_IDLE_MS;
  }

  /** Partitions whose index is in memory now. */
  get size(): number {
    return this.loaded.size;
  }

  /** The estimated bytes of every index in memory now. */
  get bytes(): number {
    let bytes = 0;
    for (const { index } of this.loaded.values()) bytes += index.estimatedBytes;
    return bytes;
  }

  get(partition: string): Loaded | undefined {
    return this.loaded.get(partition);
  }

  /** The partition's index, now the most recently used; undefined when it is not in memory. */
  use(partition: string, now: number): Loaded | undefined {
    const known = this.loaded.get(partition);
    if (!known) return undefined;
    // Most recently used last, so the first key is the one to drop.
    this.loaded.delete(partition);
    known.lastUsed = now;
    this.loaded.set(partition, known);
    return known;
  }

  /** Holds a partition's index just loaded, as the most recently used. */
  add(partition: string, loaded: Loaded): void {
    this.loaded.set(partition, loaded);
  }

  /** Takes the partition's index out of memory, and gives what it was. */
  delete(partition: string): Loaded | undefined {
    const loaded = this.loaded.get(partition);
    this.loaded.delete(partition);
    return loaded;
  }

  /**
   * The least recently used partitions to drop while those in memory are over
   * MAX_LOADED_PARTITIONS or their estimated bytes over the budget; never `inUse`, the one this
   * call is using, nor one already being dropped.
   */
  beyondBudget(inUse: string): string[] {
    let count = 0;
    let bytes = 0;
    for (const [partition, { index }] of this.loaded) {
      if (this.dropping.has(partition)) continue;
      count += 1;
      bytes += index.estimatedBytes;
    }
    const drops: string[] = [];
    for (const [partition, { index }] of this.loaded) {
      if (count <= MAX_LOADED_PARTITIONS && bytes <= this.maxBytes) break;
      if (partition === inUse || this.dropping.has(partition)) continue;
      count -= 1;
      bytes -= index.estimatedBytes;
      drops.push(partition);
    }
    return drops;
  }

  /** The partitions unused for the idle time at `now`, not already being dropped. */
  idle(now: number): string[] {
    const drops: string[] = [];
    for (const [partition, loaded] of this.loaded) {
      if (this.isIdle(loaded, now) && !this.dropping.has(partition)) drops.push(partition);
    }
    return drops;
  }

  /** Used after `now` (the clock was stepped back since) is idle too: its idle time is unknown (ADR 0168). */
  isIdle(loaded: Loaded, now: number): boolean {
    return !isWithin(now, loaded.lastUsed, this.idleMs);
  }

  /** The partition's drop is under way: it no longer counts against the budget until `dropEnded`. */
  dropStarted(partition: string): void {
    this.dropping.add(partition);
  }

  dropEnded(partition: string): void {
    this.dropping.delete(partition);
  }
}
