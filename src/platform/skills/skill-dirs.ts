import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { isSkillName, type Provenance, type Skill, type SkillProblem, type SkillScope } from "./model.ts";
import { parseSkill } from "./parse.ts";
import { RACY_MS, readSkillFile, refuseUnreadable, SKILL_FILE } from "./skill-file.ts";

/**
 * Parsed SKILL.md files by path, kept while the file is the same: resolving skills runs on every
 * initialize and tools/list, and reading and parsing every file each time dominated those
 * requests. The same file is the same size, modification time, change time and inode: the
 * change time moves when a copy that keeps its source's modification time lands (`cp -p`,
 * `touch -r`), and the inode when a file is replaced by a rename, so an operator's same-size
 * edit is never served stale (adr/0051). A parse of a file changed within RACY_MS of the read is
 * not kept: an edit in the same clock tick would leave every time as it was.
 */
export class SkillFileCache {
  private readonly entries = new Map<string, { stamp: string; outcome: Skill | Error }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** How many parsed files are held; for tests that pin what is let go. */
  get size(): number {
    return this.entries.size;
  }

  async parse(path: string, scope: SkillScope, provenance: Provenance | undefined): Promise<Skill> {
    const info = await stat(path);
    refuseUnreadable(path, info);
    const stamp = `${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.ino}:${scope}:${provenance ?? ""}`;
    let entry = this.entries.get(path);
    if (entry?.stamp !== stamp) {
      const text = await readSkillFile(path);
      if (text === undefined) throw Object.assign(new Error(`${path} is gone`), { code: "ENOENT" });
      entry = { stamp, outcome: tryParse(text, scope, provenance) };
      if (this.now() - Math.max(info.mtimeMs, info.ctimeMs) < RACY_MS) this.entries.delete(path);
      else this.entries.set(path, entry);
    }
    if (entry.outcome instanceof Error) throw entry.outcome;
    return entry.outcome;
  }
}

function tryParse(text: string, scope: SkillScope, provenance: Provenance | undefined): Skill | Error {
  try {
    return parseSkill(text, scope, provenance);
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
  const skills: Skill[] = [];
  const problems: SkillProblem[] = [];
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { skills, problems };
    throw error;
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".") || !entry.isDirectory()) continue;
    if (!isSkillName(entry.name)) {
      problems.push({ scope, name: entry.name, message: "folder name is not a valid skill name" });
      continue;
    }
    const path = join(dir, entry.name, SKILL_FILE);
    let skill: Skill;
    try {
      skill = await cache.parse(path, scope, provenance);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const message = code ? `no readable ${SKILL_FILE} in the folder` : (error as Error).message;
      problems.push({ scope, name: entry.name, message });
      continue;
    }
    if (skill.name !== entry.name) {
      problems.push({ scope, name: entry.name, message: `name: "${skill.name}" does not match its folder` });
      continue;
    }
    const folder = join(dir, entry.name);
    skills.push({ ...skill, dir: folder, files: await listBundledFiles(folder) });
  }
  return { skills, problems };
}

/** At most this many bundled files are offered per skill; the rest are not listed. */
export const MAX_BUNDLED_FILES = 100;

/**
 * The files beside SKILL.md, relative to the skill's folder, found by walking it. Only
 * these exact paths can be read back, so a requested path never reaches the filesystem
 * unless the walk produced it.
 */
async function listBundledFiles(folder: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(folder, relative), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (found.length >= MAX_BUNDLED_FILES) return;
      if (entry.name.startsWith(".")) continue;
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && path !== SKILL_FILE) found.push(path);
    }
  };
  await walk("");
  return found.sort();
}
