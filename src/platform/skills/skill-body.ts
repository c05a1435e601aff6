import { dirname, join } from "node:path";
import { Conflict } from "../../errors.ts";
import { type OpenedFile, pinFolder } from "../../storage/no-follow.ts";
import type { Skill } from "./model.ts";
import { parseSkill } from "./parse.ts";
import { openSkillFile, refuseUnreadable, SKILL_FILE, scopeFolderAllows } from "./skill-file.ts";
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
  const opened = await openSkillText(skill);
  try {
    return bodyIn(skill, await readSkillText(skill, opened));
  } finally {
    await opened.handle.close();
  }
}

/**
 * A listed skill's SKILL.md, open for reading below its scope folder pinned as a listing pins it;
 * the caller closes it. Gone, or refused (a link, not a regular file): 409, as bodyOf answers.
 */
export async function openSkillText(skill: Skill): Promise<OpenedFile> {
  const { dir, scope, name } = skill;
  if (dir === undefined) throw new Error(`the ${scope} skill "${name}" has neither a body nor a folder`);
  let opened: OpenedFile | undefined;
  try {
    opened = await openSkillFile(
      join(dir, SKILL_FILE),
      await pinFolder(dirname(dir), scopeFolderAllows(scope)),
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw unreadable(error, skill);
  }
  if (opened === undefined) throw changed(skill, "was removed");
  return opened;
}

/** The text of a SKILL.md openSkillText opened, refused over MAX_SKILL_FILE_BYTES as a listing refuses it. */
export async function readSkillText(skill: Skill, { handle, info }: OpenedFile): Promise<string> {
  try {
    refuseUnreadable(join(skill.dir ?? "", SKILL_FILE), info);
    return await handle.readFile("utf8");
  } catch (error) {
    throw unreadable(error, skill);
  }
}

/** The body of `text`, checked as the listing checked the skill's file: 409 if it is no longer it. */
export function bodyIn(skill: Skill, text: string): string {
  let parsed: ReturnType<typeof parseSkill>;
  try {
    parsed = parseSkill(text, skill.scope);
  } catch (error) {
    throw changed(skill, `was changed into one that does not parse (${(error as Error).message})`);
  }
  if (parsed.name !== skill.name) throw changed(skill, `was renamed "${parsed.name}"`);
  return parsed.body;
}

function changed({ scope, name }: Skill, why: string): Conflict {
  return new Conflict(
    "skill_unreadable",
    `The ${scope} skill "${name}" cannot be read: its ${SKILL_FILE} ${why} since it was listed. List the skills again to see what it is now.`,
  );
}
