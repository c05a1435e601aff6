import { join, relative } from "node:path";
import { Conflict } from "../../errors.ts";
import { HISTORY_DIR, versionsDir } from "./history.ts";
import { isSymlink, MAX_EDITED_SKILL_FILE_BYTES, readSkillFile, SkillFileRefused } from "./skill-file.ts";

/** Which skill a write or a history read is about: its scope names it to the caller. */
interface SkillNamed {
  scope: string;
  name: string;
}

/**
 * A SKILL.md (or a saved version of one) below scope folder `dir`, read by the one reader; a
 * refusal says what to do.
 */
export async function readOrRefuse(
  dir: string,
  path: string,
  skill: SkillNamed,
): Promise<string | undefined> {
  try {
    return await readSkillFile(path, dir, MAX_EDITED_SKILL_FILE_BYTES);
  } catch (error) {
    throw unreadable(error, skill);
  }
}

/** What a refusal of one of the skill's files answers: `409 skill_unreadable`, saying what to do. */
export function unreadable(error: unknown, { scope, name }: SkillNamed): unknown {
  if (!(error instanceof SkillFileRefused)) return error;
  return new Conflict(
    "skill_unreadable",
    `The ${scope} skill "${name}" cannot be read: its ${error.message}. Delete the skill (that removes it), or have an operator replace the file with a regular one.`,
  );
}

/** The folders a skill's files are reached through: its scope's, its own, and its history's two. */
export type SkillFolder = "scope" | "skill" | "history" | "versions";

/**
 * Refuses a skill whose named folders under scope folder `dir` (`dir` itself included, as
 * `scope`) include a symlink (an operator's): its files would be read, and written, wherever the
 * link points, past the O_NOFOLLOW that guards only a path's last step (adr/0139). A workspace's
 * or a person's `skills/` is Atrium's own folder, unlike an operator's configured org or platform
 * one, so it may not be a link either. The listing reports such a folder as a problem; a delete
 * removes a linked skill folder as a link, never what it points to.
 */
export async function refuseLinkedFolders(
  dir: string,
  skill: SkillNamed,
  folders: readonly SkillFolder[],
): Promise<void> {
  const paths: Record<SkillFolder, string> = {
    scope: dir,
    skill: join(dir, skill.name),
    history: join(dir, HISTORY_DIR),
    versions: versionsDir(dir, skill.name),
  };
  for (const folder of folders) {
    if (!(await isSymlink(paths[folder]))) continue;
    if (folder === "scope") {
      throw new Conflict(
        "skill_unreadable",
        `The ${skill.scope} skills folder is a symlink, which Atrium does not follow: no ${skill.scope} skill is read or written through it. Have an operator put the folder itself in its place.`,
      );
    }
    const mend =
      folder === "skill"
        ? "Delete the skill (that removes the link, never what it points to), or have an operator put the folder itself in its place."
        : "Have an operator put the folder itself in its place.";
    throw new Conflict(
      "skill_unreadable",
      `The ${skill.scope} skill "${skill.name}" cannot be read: its folder ${relative(dir, paths[folder])} is a symlink, which Atrium does not follow. ${mend}`,
    );
  }
}
