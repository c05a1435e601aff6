import { readFile } from "node:fs/promises";
import { join } from "node:path";

// Same shape as Atrium's file ids. Checked before touching the disk so an id can never name a path
// outside the data dir — Atrium has to do this too, so the baselines pay for it as well.
const FILE_ID = /^fl_[0-9a-f]{24}$/;

export type Metadata = Record<string, unknown>;

// Deliberately uncached: Atrium's files__info reads metadata from disk on every call, and the
// baselines must do the same work for the comparison to mean anything.
export async function readMetadata(dataDir: string, id: string): Promise<Metadata> {
  if (!FILE_ID.test(id)) throw new Error(`invalid file id: ${id}`);
  const raw = await readFile(join(dataDir, `${id}.json`), "utf8");
  return JSON.parse(raw) as Metadata;
}
