import { readFile } from "node:fs/promises";
import { parseStoredJson } from "../../storage/atomic.ts";
import type { Snapshot } from "./snapshot.ts";

/** A snapshot as listed: enough to choose one, without its tools. */
export interface SnapshotSummary {
  version: number;
  takenAt: string;
  generation: number;
  protocolVersion: string;
  digest: string;
  toolCount: number;
}

/** How many snapshot files a listing reads at once: each may be megabytes of tools. */
const SNAPSHOT_READS_AT_ONCE = 4;

/**
 * The summaries of the snapshot files `pathOf` names, newest first, read a few at a time: reading
 * every kept snapshot at once would hold them all in memory.
 */
export async function summarizeSnapshots(
  versions: readonly number[],
  pathOf: (version: number) => string,
): Promise<SnapshotSummary[]> {
  const summarize = async (version: number): Promise<SnapshotSummary> => {
    const path = pathOf(version);
    const s = parseStoredJson(path, await readFile(path, "utf8")) as Snapshot;
    return {
      version,
      takenAt: s.takenAt,
      generation: s.generation,
      protocolVersion: s.protocolVersion,
      digest: s.digest,
      toolCount: s.tools.length,
    };
  };
  const newestFirst = [...versions].sort((a, b) => b - a);
  const summaries: SnapshotSummary[] = [];
  for (let at = 0; at < newestFirst.length; at += SNAPSHOT_READS_AT_ONCE)
    summaries.push(...(await Promise.all(newestFirst.slice(at, at + SNAPSHOT_READS_AT_ONCE).map(summarize))));
  return summaries;
}
