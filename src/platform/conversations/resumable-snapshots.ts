import { randomBytes } from "node:crypto";

/**
 * Partitions remembered as dropped with events numbered past their last snapshot (a save that
 * failed) at most. Past it a new boot id is taken instead, so every snapshot written before is
 * another process's: each partition's next load starts a new generation and its drop writes once,
 * which costs only that a cursor given before is refused, saying to search again.
 */
const MAX_UNSAVED_PARTITIONS = 1_000;
/**
 * Partitions whose last saved numbering is remembered at most, the most recently saved: one
 * forgotten is only no longer checked against a copy of an older snapshot of it put back.
 */
const MAX_RECENT_SAVES = 1_000;

/**
 * Which snapshots a load keeps the generation of (adr/0144): only one written by this instance
 * (its boot id, in the snapshot) of a partition it did not number past since. Any other may be
 * behind events its writer numbered and a cursor walks, though no log is: a crash after B was
 * made and deleted read no log, kept the generation, and new events took B's numbers
 * (search-cursor.test.ts "is refused after a crash whose snapshot is not behind"). Held in the
 * snapshots themselves, so memory grows only with failed saves and recent ones, bounded both.
 */
export class ResumableSnapshots {
  private id = newBootId();
  /**
   * Partitions dropped with events numbered past the last snapshot this instance wrote of them:
   * their snapshot is this instance's but behind. Forgotten once a save succeeds.
   */
  private readonly unsaved = new Set<string>();
  /** The numbering each partition's last snapshot by this instance holds, least recent first. */
  private readonly recentSaves = new Map<string, string>();

  /** Names this instance in every snapshot it writes. */
  get bootId(): string {
    return this.id;
  }

  /**
   * Whether a load that read no log keeps the generation of the partition's snapshot by `writer`,
   * of `numbering`: not when it is an older one of this instance's (a copy put back), as far as
   * the recent saves tell.
   */
  resumes(partition: string, writer: string | undefined, numbering: string): boolean {
    if (writer !== this.id || this.unsaved.has(partition)) return false;
    return (this.recentSaves.get(partition) ?? numbering) === numbering;
  }

  /** This instance wrote the partition's snapshot of all it numbered, `numbering`. */
  saved(partition: string, numbering: string): void {
    this.unsaved.delete(partition);
    this.recentSaves.delete(partition);
    this.recentSaves.set(partition, numbering);
    const oldest = this.recentSaves.keys().next().value;
    if (this.recentSaves.size > MAX_RECENT_SAVES && oldest !== undefined) this.recentSaves.delete(oldest);
  }

  /** The partition's index left memory with events numbered past its last snapshot. */
  droppedUnsaved(partition: string): void {
    if (this.unsaved.has(partition)) return;
    if (this.unsaved.size >= MAX_UNSAVED_PARTITIONS) {
      this.id = newBootId();
      this.unsaved.clear();
      this.recentSaves.clear();
    }
    this.unsaved.add(partition);
  }
}

/** Random, so no other process, this program's before a restart included, names itself the same. */
function newBootId(): string {
  return randomBytes(12).toString("base64url");
}
