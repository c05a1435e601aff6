import { lstat, readdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { forEachAtMost } from "../../kernel/at-most.ts";
import { parseStoredJson, writeFileAtomic } from "../../storage/atomic.ts";
import { makeFolderIfMissing } from "../../storage/folders.ts";
import type { RecoveryPass } from "../../storage/recovery.ts";
import { spelledOut, spelledOutProse } from "../../text.ts";
import { lineHidingText } from "./parse.ts";
import { MAX_EDITED_SKILL_FILE_BYTES, readSkillFile } from "./skill-file.ts";

// A skill's saved versions: `<scope dir>/.history/<name>/N.md` (the whole file) and `N.json`
// (its number and time). History lives in a dot-folder the scope reader skips; a delete through
// Atrium removes it (adr/0098), so what a scope holds is bounded by its skills.
export const HISTORY_DIR = ".history";

const VERSION_TEXT = /^(\d+)\.md$/;
const VERSION_META = /^(\d+)\.json$/;

export interface SkillVersion {
  version: number;
  savedAt: string;
}

export function versionsDir(scopeDir: string, name: string): string {
  return join(scopeDir, HISTORY_DIR, name);
}

/**
 * Files of one history read at once: all at once, 20,000 versions used up the process's file
 * descriptors (EMFILE, for every request then) and held the event loop in one turn.
 */
const READS_AT_ONCE = 16;

/** The most of a version's metadata (`N.json`, some 60 bytes) Atrium reads. */
const MAX_VERSION_META_BYTES = 4 * 1024;

/**
 * The saved versions with their metadata, oldest first; none when the skill has no history. Each
 * `N.json` is read as a SKILL.md is (skill-file.ts), below scope folder `within`: an operator's
 * symlink or FIFO in its place is refused (SkillFileRefused), never followed or waited on.
 */
export async function listVersions(versions: string, within: string): Promise<SkillVersion[]> {
  const { metas } = await versionNumbers(versions);
  const listed: SkillVersion[] = [];
  await forEachAtMost(metas, READS_AT_ONCE, async (n) => {
    const path = join(versions, `${n}.json`);
    const text = await readSkillFile(path, within, MAX_VERSION_META_BYTES);
    // Gone since the folder was listed: a save forgot it as the 101st oldest.
    if (text === undefined) return;
    const { savedAt } = (parseStoredJson(path, text) ?? {}) as { savedAt?: unknown };
    // Only what R6 writes, and its time made visible: a file placed by hand, or changed, could
    // hold anything, and every field reaches the caller's model (adr/0132).
    if (typeof savedAt === "string") {
      listed.push({ version: n, savedAt: spelledOut(savedAt) });
      return;
    }
    // Holding no time, it is given the one R6 would: its text's (none: R6 removes it).
    const written = await lstat(join(versions, `${n}.md`)).catch(() => undefined);
    if (written) listed.push({ version: n, savedAt: written.mtime.toISOString() });
  });
  return listed.sort((a, b) => a.version - b.version);
}

/** A saved version as it is answered to a caller (skills__history, GET …/history/:version). */
export interface ShownVersion {
  text: string;
  /**
   * The file's first line holding a character a reader cannot see, when it holds any: then `text`
   * has each written out (`<U+202E>`), and is not the file's bytes.
   */
  spelledOutFromLine?: number;
}

/**
 * A version's text, as shown: as stored, unless it holds what a reader cannot see (saved before
 * adr/0132, or placed by hand). Then each such character is spelled out, so what reaches a model
 * is what a person reading it sees; the body a skill may hold now is refused such characters, and
 * a reviewer may still read what an old version said.
 */
export function shownVersion(stored: string): ShownVersion {
  const line = lineHidingText(stored);
  return line === undefined ? { text: stored } : { text: spelledOutProse(stored), spelledOutFromLine: line };
}

/**
 * Appends `text` as the next version: `N.md`, then its `N.json`. Numbers only grow. `.history`
 * and the skill's folder in it are made inside the existing scope folder, each flushed in its
 * parent, so a version survives a power loss with the folders that hold it.
 */
export async function recordVersion(versions: string, text: string, savedAt: string): Promise<number> {
  await makeFolderIfMissing(dirname(versions));
  await makeFolderIfMissing(versions);
  const { texts } = await versionNumbers(versions);
  const next = Math.max(0, ...texts) + 1;
  await writeFileAtomic(join(versions, `${next}.md`), text);
  await writeVersionMeta(versions, next, savedAt);
  await forgetOldest(versions, [...texts, next]);
  return next;
}

/**
 * How many versions of one skill are kept, the newest: each save lists them and each history
 * read opens them, and a member's own skill updated thousands of times cost both for everyone
 * (adr/0082).
 */
export const MAX_VERSIONS_KEPT = 100;

/**
 * Removes the versions past the newest MAX_VERSIONS_KEPT: text first, so a crash between leaves
 * a metadata file alone, which R6 removes, never a text R6 would give metadata again.
 */
async function forgetOldest(versions: string, numbers: number[]): Promise<void> {
  const sorted = numbers.sort((a, b) => a - b);
  for (const old of sorted.slice(0, Math.max(0, sorted.length - MAX_VERSIONS_KEPT))) {
    await rm(join(versions, `${old}.md`), { force: true });
    await rm(join(versions, `${old}.json`), { force: true });
  }
}

/**
 * R6 (storage/recovery.ts): history ends with the current SKILL.md, in scope folder `within`. An `N.json` without its
 * `N.md` is removed; an `N.md` without its `N.json` gets one, saved at the `.md`'s mtime; a
 * current text (`undefined` for a deleted skill) that is not the newest version is recorded.
 */
export async function reconcileHistory(
  versions: string,
  within: string,
  current: { text: string; savedAt: string } | undefined,
  pass: RecoveryPass,
): Promise<void> {
  const { texts, metas } = await versionNumbers(versions);
  for (const version of metas) {
    if (!texts.includes(version)) await pass.remove(join(versions, `${version}.json`));
  }
  for (const version of texts) {
    if (metas.includes(version)) continue;
    const savedAt = (await stat(join(versions, `${version}.md`))).mtime.toISOString();
    await writeVersionMeta(versions, version, savedAt);
    pass.completed += 1;
  }
  if (current === undefined) return;
  const newest = Math.max(0, ...texts);
  // Through the one reader: a FIFO an operator left here would hang boot (adr/0082); its refusal
  // reaches the caller, which leaves the skill as it is and warns.
  const newestText =
    newest > 0
      ? await readSkillFile(join(versions, `${newest}.md`), within, MAX_EDITED_SKILL_FILE_BYTES)
      : undefined;
  if (newestText !== current.text) {
    await recordVersion(versions, current.text, current.savedAt);
    pass.completed += 1;
  }
}

/** The version numbers that have their text (`N.md`) and their metadata (`N.json`). */
async function versionNumbers(versions: string): Promise<{ texts: number[]; metas: number[] }> {
  let entries: string[];
  try {
    entries = await readdir(versions);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { texts: [], metas: [] };
    throw error;
  }
  const numbers = (pattern: RegExp) =>
    entries.flatMap((entry) => {
      const match = pattern.exec(entry);
      return match ? [Number(match[1])] : [];
    });
  return { texts: numbers(VERSION_TEXT), metas: numbers(VERSION_META) };
}

async function writeVersionMeta(versions: string, version: number, savedAt: string): Promise<void> {
  await writeFileAtomic(join(versions, `${version}.json`), JSON.stringify({ version, savedAt }));
}

/**
 * Removes a deleted skill's history. Kept, the history of every name ever deleted grew a scope's
 * folder without end, uncounted by the 500-skill cap (adr/0098).
 */
export async function removeHistory(versions: string): Promise<void> {
  await rm(versions, { recursive: true, force: true });
}
