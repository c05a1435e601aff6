import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { Conflict, Forbidden, InvalidInput, NotFound } from "../../errors.ts";
import { type Clock, systemClock } from "../../kernel/clock.ts";
import type { EventPublisher, SkillChange } from "../../kernel/events.ts";
import { createLogger, type Logger } from "../../log.ts";
import { landedIsDone, writeFileAtomic } from "../../storage/atomic.ts";
import { isFolder, makeFolderIfMissing, makeFolderPathIfMissing } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { checkedBeforeCommit, RecordFolders } from "../../storage/owned-records.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { type LeftoverRules, RecoveryPass } from "../../storage/recovery.ts";
import { type AccessCheck, withRoleRequired } from "../../workspace/access-check.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { archivedDuringSave } from "./archived-save.ts";
import {
  listVersions,
  recordVersion,
  removeHistory,
  type ShownVersion,
  type SkillVersion,
  shownVersion,
  versionsDir,
} from "./history.ts";
import { isSkillName, type LoadingChannel, type Provenance, type Skill } from "./model.ts";
import { parseSkill, SkillInvalid } from "./parse.ts";
import { isSymlink, refuseTooLarge, SKILL_FILE, skillFileExists } from "./skill-file.ts";
import { SkillRecovery } from "./skill-recovery.ts";
import { editSkillText, renderSkill } from "./skill-text.ts";
import { readOrRefuse, refuseLinkedFolders, type SkillFolder, unreadable } from "./unreadable.ts";

/** What a write or a history read refuses as a link: every folder on the way to the skill's files. */
const EVERY_FOLDER: readonly SkillFolder[] = ["scope", "skill", "history", "versions"];

/** The scopes a person can write through Atrium; org and platform skills are the operator's files. */
export type WritableScope = "workspace" | "user";
export const WRITABLE_SCOPES: readonly WritableScope[] = ["workspace", "user"];

export interface SkillDraft {
  description: string;
  body: string;
  loading?: LoadingChannel | undefined;
  tools?: string[] | undefined;
  provenance?: Exclude<Provenance, "vendored"> | undefined;
}

/** What an update means to do: replace the body, or patch the settings; never both at once. */
export type SkillUpdate =
  | { intent: "replace_body"; body: string }
  | {
      intent: "patch_metadata";
      description?: string | undefined;
      loading?: LoadingChannel | undefined;
      tools?: string[] | undefined;
    };

export interface WriteTarget {
  scope: WritableScope;
  workspaceId: string;
  principalId: string;
  /**
   * The caller's access, asked just before the one rename that commits a create, an update or a
   * delete: refused, the skill is as it was, and nothing staged is left (adr/0154, amended). A
   * workspace skill's write asks the admin role there too (`commitCheck`).
   */
  access: AccessCheck;
}

/**
 * Creates, edits and deletes workspace- and user-scope skills. Workspace writes take the
 * workspace admin role, checked when the write is asked for and again at its commit point; user
 * writes are the caller's own. Every write is a
 * whole-file atomic replace and is kept as a numbered version. A save commits when SKILL.md
 * is replaced and records the version after, so what a crash leaves has one rule: history
 * ends with the current SKILL.md (R5, R6 in storage/recovery.ts; adr/0024).
 */
export class SkillWriter implements LeftoverRules {
  private readonly locks = new KeyedLock();
  /** Assembles a new skill's folder beside its place, and renames a deleted one aside (R4, R5). */
  private readonly folders = new RecordFolders();

  /** What a crash or a stray file leaves in the skill folders, each skill under the lock its writes take. */
  private readonly recovery: SkillRecovery;

  constructor(
    private readonly layout: StorageLayout,
    private readonly workspaces: WorkspaceStore,
    private readonly events: EventPublisher,
    private readonly clock: Clock = systemClock,
    private readonly log: Logger = createLogger("silent"),
  ) {
    this.recovery = new SkillRecovery(layout, this.locks, this.folders, log);
  }

  create(target: WriteTarget, name: string, draft: SkillDraft): Promise<Skill> {
    // Creates in one scope folder one at a time, so two cannot both take its last place.
    const scope = this.scopeDir(target, name, "write");
    return this.locks.run(`${scope}\0create`, () =>
      this.locked(target, name, async (dir) => {
        await refuseLinkedFolders(dir, { scope: target.scope, name }, EVERY_FOLDER);
        if (await skillFileExists(join(dir, name, SKILL_FILE))) {
          throw new Conflict(
            "skill_exists",
            `A ${target.scope} skill named "${name}" exists; update it instead.`,
          );
        }
        const held = await skillFolderCount(dir);
        if (held >= MAX_SKILLS_PER_SCOPE) {
          throw new Conflict(
            "too_many_skills",
            `This ${target.scope} scope already holds ${held} skills, the most Atrium writes into one (${MAX_SKILLS_PER_SCOPE}): delete one to create another.`,
          );
        }
        const skill = await this.save(target, dir, name, renderSkill(name, draft));
        this.announce(target, name, "created");
        return skill;
      }),
    );
  }

  update(target: WriteTarget, name: string, update: SkillUpdate): Promise<Skill> {
    return this.locked(target, name, async (dir) => {
      await refuseLinkedFolders(dir, { scope: target.scope, name }, EVERY_FOLDER);
      const current = await this.currentText(target, dir, name, update.intent === "replace_body");
      const skill = await this.save(target, dir, name, editSkillText(current, name, update));
      this.announce(target, name, "updated");
      return skill;
    });
  }

  delete(target: WriteTarget, name: string): Promise<void> {
    return this.locked(target, name, async (dir) => {
      // A linked skill folder or versions folder is removed as a link; one through a linked
      // scope folder or `.history` would remove what that link points to.
      await refuseLinkedFolders(dir, { scope: target.scope, name }, ["scope", "history"]);
      // Only that it exists, never read: a SKILL.md an operator broke, or left as a FIFO, can
      // still be deleted, and written anew. A linked skill folder is the link, whatever its
      // target holds (nothing, when it dangles): an update's 409 says to delete it.
      const present =
        (await isSymlink(join(dir, name))) || (await skillFileExists(join(dir, name, SKILL_FILE)));
      if (!present) throw skillNotFound(target, name);
      // Renamed aside under a name unique per delete, then removed (R4).
      const removal = await this.folders.remove(dir, name, checkedBeforeCommit(this.commitCheck(target)));
      if (removal === "gone") throw skillNotFound(target, name);
      // After the commit point: a crash between leaves the history, which recovery removes (R9).
      await removeHistory(versionsDir(dir, name));
      this.announce(target, name, "deleted");
    });
  }

  /** After the write committed: a user-scope skill is its owner's, so its event is theirs alone. */
  private announce(target: WriteTarget, name: string, change: SkillChange): void {
    const { workspaceId, principalId } = target;
    this.events.publish(
      target.scope === "user"
        ? { type: "skill.changed", workspaceId, ownerId: principalId, scope: "user", name, change }
        : { type: "skill.changed", workspaceId, scope: "workspace", name, change },
    );
  }

  async history(target: WriteTarget, name: string): Promise<SkillVersion[]> {
    const dir = this.scopeDir(target, name, "read");
    await refuseLinkedFolders(dir, { scope: target.scope, name }, EVERY_FOLDER);
    const versions = await listVersions(versionsDir(dir, name), dir).catch((error: unknown) => {
      throw unreadable(error, { scope: target.scope, name });
    });
    // A skill whose one save could not record its version has none until it is saved again.
    if (versions.length === 0 && !(await skillFileExists(join(dir, name, SKILL_FILE))))
      throw skillNotFound(target, name);
    return versions;
  }

  /** A saved version's text, any character a reader cannot see in it spelled out (adr/0132). */
  async version(target: WriteTarget, name: string, version: number): Promise<ShownVersion> {
    const dir = this.scopeDir(target, name, "read");
    await refuseLinkedFolders(dir, { scope: target.scope, name }, EVERY_FOLDER);
    const text = Number.isInteger(version)
      ? await readOrRefuse(dir, join(versionsDir(dir, name), `${version}.md`), { scope: target.scope, name })
      : undefined;
    if (text === undefined)
      throw new NotFound("skill_version_not_found", `"${name}" has no version ${version}.`);
    return shownVersion(text);
  }

  private async save(target: WriteTarget, dir: string, name: string, text: string): Promise<Skill> {
    refuseTooLarge(text);
    const skill = parseOrRefuse(text, target);
    const staged: { dir?: string } = {};
    const commit = async () => {
      // R6 first: the text being replaced is in the history even if its own save could not record it.
      await this.recovery.recoverSkill(dir, name, RecoveryPass.housekeeping(this.clock()));
      await this.commitCurrent(dir, name, text, staged, this.commitCheck(target));
    };
    // Saved once SKILL.md is in place, whatever follows: an error answered now would say "changed
    // nothing" of a text every agent reads. A version not recorded (a full disk) is recorded by
    // R6 at the skill's next save or the next start, since history ends with the current SKILL.md.
    const record = () => recordVersion(versionsDir(dir, name), text, new Date(this.clock()).toISOString());
    const unrecorded = (error: unknown) =>
      this.log.warn(
        { scope: target.scope, name, code: (error as NodeJS.ErrnoException).code },
        "skill saved, its version not recorded until its next save or the next start",
      );
    if (target.scope === "user") {
      await makeFolderPathIfMissing(dir);
      await commit();
      await record().catch(unrecorded);
      return skill;
    }
    try {
      // Inside a workspace nothing is created recursively: if it was archived, this fails.
      await makeFolderIfMissing(dir);
      await commit();
      await record().catch(async (error: unknown) => {
        if (!(await isFolder(dir))) throw error;
        unrecorded(error);
      });
    } catch (error) {
      // Archived while the save ran: what it staged went along to `_archive/` and its write met
      // ENOENT. Removed there, and answered 404 as any request to an archived workspace is, as a
      // file's create is (storage/owned-records.ts).
      throw await archivedDuringSave(error, this.layout, target.workspaceId, name, staged.dir);
    }
    return skill;
  }

  /**
   * Replaces SKILL.md, the commit point of a save. A new skill's folder is assembled beside
   * its place (`staged.dir`, once made) and renamed in whole, so no crash leaves a folder without
   * SKILL.md.
   */
  private async commitCurrent(
    dir: string,
    name: string,
    text: string,
    staged: { dir?: string },
    access: AccessCheck,
  ): Promise<void> {
    const folder = join(dir, name);
    if (await isFolder(folder)) {
      // An overwrite that lands is done, though its folder could not be flushed (adr/0166).
      await writeFileAtomic(join(folder, SKILL_FILE), text, access).catch(landedIsDone);
      return;
    }
    await this.folders.create(
      dir,
      name,
      (staging) => {
        staged.dir = staging;
        return writeFileAtomic(join(staging, SKILL_FILE), text);
      },
      checkedBeforeCommit(access),
    );
  }

  recoverWorkspace(workspaceId: string, present: ReadonlySet<string>, pass: RecoveryPass): Promise<void> {
    return this.recovery.recoverWorkspace(workspaceId, present, pass);
  }

  recoverInstance(pass: RecoveryPass): Promise<void> {
    return this.recovery.recoverInstance(pass);
  }

  /**
   * The current SKILL.md, refused as the update would be if it does not parse; but a new body may
   * replace one refused for hiding text (saved before adr/0132, or an operator's), the one way to
   * mend it short of a delete. parseSkill checks the body last, so nothing else is wrong with it.
   */
  private async currentText(
    target: WriteTarget,
    dir: string,
    name: string,
    replacingBody: boolean,
  ): Promise<string> {
    const text = await readOrRefuse(dir, join(dir, name, SKILL_FILE), { scope: target.scope, name });
    if (text === undefined) throw skillNotFound(target, name);
    try {
      parseSkill(text, target.scope);
    } catch (error) {
      if (!(replacingBody && error instanceof SkillInvalid && error.field === "body")) throw refusal(error);
    }
    return text;
  }

  private locked<T>(target: WriteTarget, name: string, work: (dir: string) => Promise<T>): Promise<T> {
    const dir = this.scopeDir(target, name, "write");
    return this.locks.run(`${dir}\0${name}`, () => work(dir));
  }

  private scopeDir(target: WriteTarget, name: string, access: "read" | "write"): string {
    if (!isSkillName(name))
      throw new InvalidInput("A skill name is 1-64 lowercase letters, digits and single hyphens.");
    if (target.scope === "user") return this.layout.userSkillsDir(target.principalId);
    if (access === "write" && this.workspaces.roleOf(target.workspaceId, target.principalId) !== "admin") {
      throw notWorkspaceAdmin();
    }
    return this.layout.workspaceSkillsDir(target.workspaceId);
  }

  /**
   * What the commit point asks: the caller's access and, for a workspace skill, the admin role
   * again, so an admin demoted while their write waited on the skill's lock or the disk changes
   * nothing every member's agent reads (test/integration/skills-write-after-demotion.test.ts).
   */
  private commitCheck(target: WriteTarget): AccessCheck {
    if (target.scope === "user") return target.access;
    const { access, principalId, workspaceId } = target;
    return withRoleRequired(access, this.workspaces, principalId, workspaceId, "admin", notWorkspaceAdmin);
  }
}

export function isWritableScope(value: unknown): value is WritableScope {
  return WRITABLE_SCOPES.includes(value as WritableScope);
}

function parseOrRefuse(text: string, target: WriteTarget): Skill {
  try {
    return parseSkill(text, target.scope);
  } catch (error) {
    throw refusal(error);
  }
}

/** What a parse's failure answers: a SkillInvalid is the caller's 400, naming the field. */
function refusal(error: unknown): unknown {
  return error instanceof SkillInvalid ? new InvalidInput(`Skill refused: ${error.message}.`) : error;
}

function notWorkspaceAdmin(): Forbidden {
  return new Forbidden(
    "Only a workspace admin can change workspace skills; write a user skill for yourself instead.",
  );
}

function skillNotFound(target: WriteTarget, name: string): NotFound {
  return new NotFound("skill_not_found", `No ${target.scope} skill named "${name}".`);
}

/**
 * The most skills one scope folder may hold for Atrium to create another: every request stats
 * each skill of the caller's scopes (adr/0051), and a member with 5,000 user skills held the
 * event loop 30 ms on each of their requests, in every workspace they belong to. An operator may
 * place more on disk.
 */
export const MAX_SKILLS_PER_SCOPE = 500;

async function skillFolderCount(dir: string): Promise<number> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((entry) => entry.isDirectory() && isSkillName(entry.name)).length;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
}
