import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { isSkillName, type Provenance, type Skill, type SkillProblem, type SkillScope } from "./model.ts";
import { parseSkill } from "./parse.ts";

export const SKILL_FILE = "SKILL.md";

/**
 * Reads every `<dir>/<name>/SKILL.md` of one scope. A file that does not parse is reported
 * with its scope, name and reason and skipped; it never fails the others.
 */
export async function readSkillDir(
  dir: string,
  scope: SkillScope,
  provenance?: Provenance,
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
    let text: string;
    try {
      text = await readFile(join(dir, entry.name, SKILL_FILE), "utf8");
    } catch {
      problems.push({ scope, name: entry.name, message: `no readable ${SKILL_FILE} in the folder` });
      continue;
    }
    try {
      const skill = parseSkill(text, scope, provenance);
      if (skill.name !== entry.name) {
        problems.push({
          scope,
          name: entry.name,
          message: `name: "${skill.name}" does not match its folder`,
        });
        continue;
      }
      const folder = join(dir, entry.name);
      skills.push({ ...skill, dir: folder, files: await listBundledFiles(folder) });
    } catch (error) {
      problems.push({ scope, name: entry.name, message: (error as Error).message });
    }
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
