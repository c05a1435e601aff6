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
      skills.push(skill);
    } catch (error) {
      problems.push({ scope, name: entry.name, message: (error as Error).message });
    }
  }
  return { skills, problems };
}
