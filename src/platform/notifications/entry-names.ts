import { namesIn } from "../../storage/folders.ts";

/** The inbox's folder of entries, one file each. */
export const ENTRIES = "entries";

/**
 * An inbox entry's file name: its seq (12 digits, so names sort as seqs do), its id and, for an
 * entry meant for one member, that member — `000000000042-ntf_….json`,
 * `000000000043-ntf_…-usr_….json` — so a listing orders, finds and filters entries without
 * reading them (ADR 0035).
 */
const ENTRY_NAME = /^([0-9]{12})-(ntf_[0-9a-f]{24})(?:-(usr_[0-9a-f]{24}))?\.json$/;

export interface EntryName {
  seq: number;
  id: string;
  /** The one member it is for; everyone when absent. */
  to?: string;
  file: string;
}

export function entryFile(seq: number, id: string, to: string | undefined): string {
  return `${String(seq).padStart(12, "0")}-${id}${to === undefined ? "" : `-${to}`}.json`;
}

/** The entries in `dir` in seq order, from the folder listing alone; none when it does not exist. */
export async function listEntryNames(dir: string): Promise<EntryName[]> {
  const files = await namesIn(dir);
  return files
    .flatMap((file) => {
      const match = ENTRY_NAME.exec(file);
      if (!match) return [];
      const name: EntryName = { seq: Number(match[1]), id: match[2] as string, file };
      if (match[3] !== undefined) name.to = match[3];
      return [name];
    })
    .sort((a, b) => a.seq - b.seq);
}
