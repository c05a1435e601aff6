import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { isPrincipalId } from "../../ids.ts";
import type { Logger } from "../../log.ts";
import { isFolder } from "../../storage/folders.ts";
import type { KeyedLock } from "../../storage/keyed-lock.ts";
import type { RecordFolders } from "../../storage/owned-records.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { type LeftoverRules, type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import { HISTORY_DIR, reconcileHistory, versionsDir } from "./history.ts";
import { isSkillName } from "./model.ts";
import {
  isSymlink,
  MAX_EDITED_SKILL_FILE_BYTES,
  readSkillFile,
  SKILL_FILE,
  SkillFileRefused,
} from "./skill-file.ts";

/**
 * R4–R6 and R9 (storage/recovery.ts) in the workspace- and user-scope skill folders SkillWriter
 * writes: its staging and renamed-aside folders and temp files swept, a skill folder a crash left
 * without SKILL.md removed, the history of a deleted skill removed, and each history made to end
 * with the current SKILL.md (adr/0024). It shares the writer's locks and record folders, so a
 * skill is never recovered while it is being saved or deleted, nor a live staging folder swept.
 * What an operator placed that Atrium does not follow or read (a link, a file that is not a
 * regular one) is left as it is and warned about once.
 */
export class SkillRecovery implements LeftoverRules {
  /** Paths already warned about: recovery runs hourly, and one warning per file is enough. */
  private readonly warned = new Set<string>();

  constructor(
    private readonly layout: StorageLayout,
    private readonly locks: KeyedLock,
    private readonly folders: RecordFolders,
    private readonly log: Logger,
  ) {}

  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (present.has("skills")) await this.recoverScope(this.layout.workspaceSkillsDir(workspaceId), pass);
  }

  /** Every person's user-scope skills. */
  async recoverInstance(pass: RecoveryPass): Promise<void> {
    let people: string[];
    try {
      people = await readdir(this.layout.usersDir());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const person of people) {
      if (isPrincipalId(person)) await this.recoverScope(this.layout.userSkillsDir(person), pass);
    }
  }

  /** R4–R6 and R9 in one scope folder (a workspace's `skills/`, or a person's), each name under its lock. */
  private async recoverScope(dir: string, pass: RecoveryPass): Promise<void> {
    if (await this.leftAsLinked(dir, "skills folder")) return;
    const names = new Set<string>();
    for (const entry of await this.folders.sweep(dir, pass)) {
      if (entry.isDirectory() && isSkillName(entry.name)) names.add(entry.name);
    }
    for (const entry of await sweepTempEntries(join(dir, HISTORY_DIR), pass)) {
      if (entry.isDirectory() && isSkillName(entry.name)) names.add(entry.name);
    }
    for (const name of names) {
      // The key SkillWriter's writes of the skill take: recovery never runs beside a save or a delete.
      await this.locks.run(`${dir}\0${name}`, () => this.recoverSkill(dir, name, pass));
    }
  }

  /**
   * R4–R6 for one skill, its lock already held by the caller: a save asks it first, so a text an
   * earlier save committed without recording its version is recorded before it is replaced.
   */
  async recoverSkill(dir: string, name: string, pass: RecoveryPass): Promise<void> {
    const folder = join(dir, name);
    // Past a linked skill folder, the sweep would remove temp-named files where it points, and
    // its SKILL.md there would be recorded as a version history reads serve (adr/0139).
    if (await this.leftAsLinked(folder, "skill folder")) return;
    const versions = versionsDir(dir, name);
    const inFolder = await sweepTempEntries(folder, pass);
    await sweepTempEntries(versions, pass);
    try {
      const text = await readSkillFile(join(folder, SKILL_FILE), dir, MAX_EDITED_SKILL_FILE_BYTES);
      if (text === undefined && inFolder.length === 0 && (await isFolder(folder))) {
        if (await pass.isStale(folder)) await pass.remove(folder); // R5
      }
      if (!(await isFolder(folder))) {
        if (await pass.isStale(versions)) await pass.remove(versions); // R9
        return;
      }
      const savedAt = async () => (await stat(join(folder, SKILL_FILE))).mtime.toISOString();
      await reconcileHistory(
        versions,
        dir,
        text === undefined ? undefined : { text, savedAt: await savedAt() },
        pass,
      );
    } catch (error) {
      if (!(error instanceof SkillFileRefused)) throw error;
      // Left as the operator placed it (a SKILL.md or a saved version that is not a regular
      // file): a delete through Atrium removes it; boot goes on.
      this.warnOnce(
        error.path,
        `skill left out of recovery: ${error.message}; delete the skill or replace the file`,
      );
    }
  }

  /** A symlinked folder recovery never walks, nor touches: warned once, as an operator placed it. */
  private async leftAsLinked(path: string, what: string): Promise<boolean> {
    if (!(await isSymlink(path))) return false;
    this.warnOnce(
      path,
      `${what} left out of recovery: it is a symlink, which Atrium does not follow; put the folder itself in its place`,
    );
    return true;
  }

  private warnOnce(path: string, message: string): void {
    if (this.warned.has(path)) return;
    this.warned.add(path);
    this.log.warn({ path }, message);
  }
}
