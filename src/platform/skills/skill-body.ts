import { dirname, join } from "node:path";
import { Conflict } from "../../errors.ts";
import { pinFolder } from "../../storage/no-follow.ts";
import type { Skill } from "./model.ts";
import { parseSkill } from "./parse.ts";
import { readSkillFile, SKILL_FILE, scopeFolderAllows } from "./skill-file.ts";
import { unreadable } from "./unreadable.ts";

/**
 * A skill's body. A connection's published skill holds it; one listed from a folder is read from
 * its SKILL.md now, below its scope folder as the listing reads it (pinned, never through a
 * link: adr/0139, 0145), and checked as the listing checks it (parseSkill). Listings keep only
 * what every request needs (name, description, settings, the body's size): kept whole, one
 * person's 500 skills of 256 KiB were held again for every workspace they filled (adr/0098). A
 * body is read when it is shown (skills__read, a skill:// read, skills/get) or composed into the
 * instructions, which are kept while the listing is.
 *
 * A SKILL.md that changed since the listing is read as it is now; one that is gone, or no longer
 * this skill, is `409 skill_unreadable`: the next request lists the folder again and shows it.
 */
export async function bodyOf(skill: Skill): Promise<string> {
  if (skill.body !== undefined) return skill.body;
  const { dir, scope, name } = skill;
  if (dir === undefined) throw new Error(`the ${scope} skill "${name}" has neither a body nor a folder`);
  const path = join(dir, SKILL_FILE);
  let text: string | undefined;
  try {
    text = await readSkillFile(path, await pinFolder(dirname(dir), scopeFolderAllows(scope)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw unreadable(error, skill);
  }
  const changed = (why: string) =>
    new Conflict(
      "skill_unreadable",
      `The ${scope} skill "${name}" cannot be read: its ${SKILL_FILE} ${why} since it was listed. List the skills again to see what it is now.`,
    );
  if (text === undefined) throw changed("was removed");
  let parsed: ReturnType<typeof parseSkill>;
  try {
    parsed = parseSkill(text, scope);
  } catch (error) {
    throw changed(`was changed into one that does not parse (${(error as Error).message})`);
  }
  if (parsed.name !== name) throw changed(`was renamed "${parsed.name}"`);
  return parsed.body;
}
