import { lstat, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileStamp, isRacy, lastChangeMs } from "../../storage/file-stamp.ts";
import { type PinnedFolder, pinFolder } from "../../storage/no-follow.ts";
import { spelledOut } from "../../text.ts";
import { isSkillName, type Provenance, type Skill, type SkillProblem, type SkillScope } from "./model.ts";
import { parseSkill } from "./parse.ts";
import { isSymlink, readSkillFile, refuseUnreadable, SKILL_FILE, scopeFolderAllows } from "./skill-file.ts";

interface Kept {
  stamp: string;
  outcome: Skill | Error;
}

/** One read of a scope folder through the cache: parse each file it meets, then end it. */
export interface FolderRead {
  /** `within`: the scope folder as the read pinned it (readSkillDir). */
  parse(
    path: string,
    scope: SkillScope,
    provenance: Provenance | undefined,
    within: PinnedFolder,
  ): Promise<Skill>;
  /** Keeps the parses this read met, and only those. */
  end(): void;
}

/**
 * Parsed SKILL.md files, by scope folder and path, kept while the file is the same: resolving
 * skills runs on every initialize and tools/list, and reading and parsing every file each time
 * dominated those requests. The same file is the same size, modification time, change time and
 * inode: the change time moves when a copy that keeps its source's modification time lands
 * (`cp -p`, `touch -r`), and the inode when a file is replaced by a rename, so an operator's
 * same-size edit is never served stale (adr/0051; storage/file-stamp.ts). A parse of a file
 * changed within RACY_MS of the read is not kept: an edit in the same clock tick would leave
 * every time as it was.
 *
 * A folder's parses are rebuilt on each read of it, so a deleted or renamed skill's parse goes
 * with the next read: kept by path forever, 20 rounds of create, list and delete of fresh names
 * held 76 MB (adr/0098). The scope cache drops a folder's group when it evicts the folder.
 */
export class SkillFileCache {
  private readonly folders = new Map<string, Map<string, Kept>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** How many parsed files are held; for tests that pin what is let go. */
  get size(): number {
    let held = 0;
    for (const files of this.folders.values()) held += files.size;
    return held;
  }

  read(dir: string): FolderRead {
    const last = this.folders.get(dir);
    const met = new Map<string, Kept>();
    return {
      parse: async (path, scope, provenance, within) => {
        // Never followed (adr/0139): a linked SKILL.md is refused, its target not even stat'ed.
        const info = await lstat(path);
        refuseUnreadable(path, info);
        const stamp = `${fileStamp(info)}:${scope}:${provenance ?? ""}`;
        let kept = last?.get(path);
        if (kept?.stamp !== stamp) {
          const text = await readSkillFile(path, within);
          if (text === undefined) throw Object.assign(new Error(`${path} is gone`), { code: "ENOENT" });
          kept = { stamp, outcome: tryParse(text, scope, provenance) };
        }
        if (!isRacy(lastChangeMs(info), this.now())) met.set(path, kept);
        if (kept.outcome instanceof Error) throw kept.outcome;
        return kept.outcome;
      },
      end: () => {
        if (met.size > 0) this.folders.set(dir, met);
        else this.folders.delete(dir);
      },
    };
  }

  /** Lets go of every parse of folder `dir`. */
  forget(dir: string): void {
    this.folders.delete(dir);
  }
}

/**
 * The file as a listing keeps it: everything but its body, which is read when it is shown or
 * composed (bodyOf): a kept body, 256 KiB each, was held once per listing (adr/0098).
 */
function tryParse(text: string, scope: SkillScope, provenance: Provenance | undefined): Skill | Error {
  try {
    const { body, ...listed } = parseSkill(text, scope, provenance);
    return { ...listed, bodyBytes: Buffer.byteLength(body) };
  } catch (error) {
    return error as Error;
  }
}

/**
 * Reads every `<dir>/<name>/SKILL.md` of one scope. A file that does not parse is reported
 * with its scope, name and reason and skipped; it never fails the others.
 */
export async function readSkillDir(
  dir: string,
  scope: SkillScope,
  provenance?: Provenance,
  cache = new SkillFileCache(),
): Promise<{ skills: Skill[]; problems: SkillProblem[] }> {
  const files = cache.read(dir);
  try {
    return await readFolder(dir, scope, provenance, files);
  } finally {
    files.end();
  }
}

async function readFolder(
  dir: string,
  scope: SkillScope,
  provenance: Provenance | undefined,
  files: FolderRead,
): Promise<{ skills: Skill[]; problems: SkillProblem[] }> {
  const skills: Skill[] = [];
  const problems: SkillProblem[] = [];
  // Listed to a model (skills__list): a folder's name, or a file's text a parse quotes, is spelled
  // out where it holds what a reader cannot see, as a skill's own text may not (adr/0132).
  const report = (name: string, message: string) =>
    problems.push({ scope, name: spelledOut(name), message: spelledOut(message) });
  // A workspace's or a person's skills folder is Atrium's own, never a link to follow; an org or
  // platform one is the operator's configured place, which may be (adr/0139).
  const atriumsOwn = scope === "workspace" || scope === "user";
  if (atriumsOwn && (await isSymlink(dir))) {
    report(basename(dir), SCOPE_SYMLINKED);
    return { skills, problems };
  }
  let entries: import("node:fs").Dirent[];
  let within: PinnedFolder;
  try {
    entries = await readdir(dir, { withFileTypes: true });
    if (entries.length === 0) return { skills, problems };
    // Pinned once per read, before any SKILL.md is read: each is read below the folder as it is
    // then, never through a link it is swapped for, or an operator's link retargeted to,
    // meanwhile (adr/0145). An empty folder costs no more look-ups than it did.
    within = await pinFolder(dir, scopeFolderAllows(scope));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { skills, problems };
    // A scope folder that cannot be listed (a symlink loop, no permission, a file in its place) is
    // this scope's problem alone: thrown, it failed every request that resolves skills.
    report(basename(dir), `the skills folder cannot be read (${code ?? "error"})`);
    return { skills, problems };
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    // A link named like a file (a README.md linked in) is skipped as a plain file is, never reported
    // as a broken skill to every member; any other is taken for a linked skill folder.
    if (entry.isSymbolicLink() && !entry.name.includes(".")) {
      // Reported, never followed, whatever it points to (not even stat'ed): a link could take the
      // listing anywhere on the host, and what it found there — SKILL.md and every file beside
      // it, served through skill:// — would reach every member of the scope from a place this
      // folder's review and permissions do not cover; nor would the kept listing's stamps, which
      // walk this folder's own tree, see it change (scope-cache.ts). Silently skipped, an
      // operator's linked skill simply never showed (test/integration/skills-operator-files.test.ts).
      report(entry.name, SYMLINKED);
      continue;
    }
    if (entry.isSymbolicLink() || !entry.isDirectory()) continue;
    if (!isSkillName(entry.name)) {
      report(entry.name, "folder name is not a valid skill name");
      continue;
    }
    const path = join(dir, entry.name, SKILL_FILE);
    let skill: Skill;
    try {
      skill = await files.parse(path, scope, provenance, within);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const message = code ? `no readable ${SKILL_FILE} in the folder` : (error as Error).message;
      report(entry.name, message);
      continue;
    }
    if (skill.name !== entry.name) {
      report(entry.name, `name: "${skill.name}" does not match its folder`);
      continue;
    }
    const folder = join(dir, entry.name);
    const bundled = await listBundledFiles(folder);
    if (bundled.unshown.length > 0) report(entry.name, notOffered(bundled.unshown));
    skills.push({ ...skill, dir: folder, files: bundled.files });
  }
  return { skills, problems };
}

const SCOPE_SYMLINKED =
  "the skills folder is a symlink, which Atrium does not follow: no skill is read through it; put the folder itself in its place";

const SYMLINKED =
  "a symlink, not a folder: Atrium does not follow links here; put the skill's folder itself here";

/** The problem of a skill some of whose bundled files are not offered for their names. */
function notOffered(unshown: string[]): string {
  const which =
    unshown.length === 1
      ? `bundled file ${unshown[0]}`
      : `${unshown.length} bundled files (first ${unshown[0]})`;
  return `${which} not offered: a name holds characters a reader cannot see (written out here as <U+…>); rename it`;
}

/** At most this many bundled files are offered per skill; the rest are not listed. */
export const MAX_BUNDLED_FILES = 100;

/**
 * The files beside SKILL.md, relative to the skill's folder, found by walking it. Only
 * these exact paths can be read back, so a requested path never reaches the filesystem
 * unless the walk produced it. A file or folder whose name holds what a reader cannot see (a
 * control, an invisible or bidirectional character: what spelledOut writes out) is not offered:
 * its name reaches a model in every listing (skills__list, resources/list); `unshown` has each
 * such path, spelled out.
 */
async function listBundledFiles(folder: string): Promise<{ files: string[]; unshown: string[] }> {
  const found: string[] = [];
  const unshown: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(folder, relative), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (found.length >= MAX_BUNDLED_FILES) return;
      if (entry.name.startsWith(".")) continue;
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (spelledOut(entry.name) !== entry.name) {
        if (entry.isDirectory() || entry.isFile()) unshown.push(spelledOut(path));
        continue;
      }
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && path !== SKILL_FILE) found.push(path);
    }
  };
  await walk("");
  return { files: found.sort(), unshown: unshown.sort() };
}
