import { join } from "node:path";
import { landedIsDone, readJsonIfExists, writeJsonAtomic } from "../../storage/atomic.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";

/** The inbox's folder of acknowledgements, one file per member. */
export const ACKS = "acks";

/** A member's acknowledgements: everything up to `upToSeq`, and the seqs after it one by one. */
export interface Acks {
  upToSeq: number;
  seqs: number[];
}

/**
 * The seqs of the entries one listing of the inbox found, and the newest of them. Seqs are never
 * given twice, so a seq at or below the newest that the listing lacks names an entry gone for good.
 */
export interface Listed {
  seqs: ReadonlySet<number>;
  newest: number;
}

/**
 * Each member's acknowledgements in a workspace's inbox, `acks/<principal>.json`: a member's ack
 * changes their file alone, so nobody else's view moves (ADR 0035). A member's file is changed
 * by one ack at a time, each rereading it, so two acks at once both land.
 */
export class MemberAcks {
  private readonly lock = new KeyedLock();

  constructor(private readonly storage: PartitionPaths) {}

  async read(workspaceId: string, principalId: string): Promise<Acks> {
    // The principal id was checked by the gate and the ids module; the file name is only it.
    return (
      ((await readJsonIfExists(this.path(workspaceId, principalId))) as Acks | undefined) ?? {
        upToSeq: 0,
        seqs: [],
      }
    );
  }

  /**
   * Acknowledges `seqs` for the member, found by the listing `listed`, or with `upTo` every seq up
   * to it; answers how many of `seqs` (with `upTo`, of the `visible` ones up to it) were new, each
   * counted once. Named seqs all acknowledged already write nothing. `access` is asked just before
   * the rename that puts the member's file in place: refused, nothing is acknowledged (adr/0154,
   * amended).
   */
  async record(
    workspaceId: string,
    principalId: string,
    what: { seqs: readonly number[]; listed: Listed } | { upTo: number; visible: readonly number[] },
    access: AccessCheck,
  ): Promise<{ acked: number }> {
    return this.lock.run(`${workspaceId}/${principalId}`, async () => {
      const acks = await this.read(workspaceId, principalId);
      if ("upTo" in what) {
        const upTo = what.upTo;
        const fresh = new Set(what.visible.filter((seq) => seq <= upTo && !isAcked(acks, seq)));
        // A seq above the listing's newest stays: an entry posted after this ack of all listed
        // the inbox may have been acknowledged by id since, and this ack does not cover it.
        await this.write(workspaceId, principalId, folded(Math.max(acks.upToSeq, upTo), acks.seqs), access);
        return { acked: fresh.size };
      }
      const fresh = what.seqs.filter((seq) => !isAcked(acks, seq));
      if (fresh.length > 0)
        await this.write(workspaceId, principalId, compact(acks, fresh, what.listed), access);
      return { acked: new Set(fresh).size };
    });
  }

  private async write(
    workspaceId: string,
    principalId: string,
    acks: Acks,
    access: AccessCheck,
  ): Promise<void> {
    // Made inside an existing workspace only, never the workspace itself.
    await makeInPartition(join(this.storage.dir(workspaceId), ACKS), workspaceId);
    // An overwrite that lands is done, though its folder could not be flushed (adr/0166).
    await writeJsonAtomic(this.path(workspaceId, principalId), acks, access).catch(landedIsDone);
  }

  private path(workspaceId: string, principalId: string): string {
    return join(this.storage.dir(workspaceId), ACKS, `${principalId}.json`);
  }
}

export function isAcked(acks: Acks, seq: number): boolean {
  return seq <= acks.upToSeq || acks.seqs.includes(seq);
}

/**
 * Adds `fresh`, forgets the seqs whose entries `listed` shows are gone, and folds every seq that
 * continues `upToSeq` into it, so the file holds no more seqs than the inbox holds entries. Without
 * the forgetting, one entry left unacknowledged kept every later single seq for ever: 100,000 of
 * them (1 MiB, rewritten at each ack) took a page of unacknowledged entries from 2 to 52 ms. A
 * seq above the listing's newest is kept: an ack begun after this one's listing may have added it.
 */
function compact(acks: Acks, fresh: readonly number[], listed: Listed): Acks {
  const kept = acks.seqs.filter((seq) => seq > listed.newest || listed.seqs.has(seq));
  return folded(acks.upToSeq, [...kept, ...fresh]);
}

/** Acks of everything up to `upToSeq` and of `single`, each single seq that continues the run folded into it. */
function folded(upToSeq: number, single: readonly number[]): Acks {
  const seqs = new Set(single);
  let upTo = upToSeq;
  while (seqs.delete(upTo + 1)) upTo += 1;
  return { upToSeq: upTo, seqs: [...seqs].filter((seq) => seq > upTo).sort((a, b) => a - b) };
}
