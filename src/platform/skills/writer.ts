import { mkdir, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import matter from "gray-matter";
import { Conflict, Forbidden, InvalidInput, NotFound, WorkspaceNotFound } from "../../errors.ts";
import { TEMP_PREFIX, writeFileAtomic } from "../../storage/atomic.ts";
import { makeFolderIfMissing } from "../../storage/folders.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { AtriumMetadata } from "./metadata-schema.ts";
import { isSkillName, type LoadingChannel, type Provenance, type Skill } from "./model.ts";
import { parseSkill, SkillInvalid } from "./parse.ts";
import { SKILL_FILE } from "./skill-dirs.ts";

/** The scopes a person can write through Atrium; org and platform skills are the operator's files. */
export type WritableScope = "workspace" | "user";
export const WRITABLE_SCOPES: readonly WritableScope[] = ["workspace", "user"];

// History lives beside the skills, in a dot-folder the scope reader skips, so it outlives a delete.
const HISTORY_DIR = ".history";

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

export interface SkillVersion {
  version: number;
  savedAt: string;
}

export interface WriteTarget {
  scope: WritableScope;
  workspaceId: string;
  principalId: string;
}

/**
 * Creates, edits and deletes workspace- and user-scope skills. Workspace writes take the
 * workspace admin role, checked now; user writes are the caller's own. Every write is a
 * whole-file atomic replace and is kept as a numbered version.
 */
export class SkillWriter {
  private readonly locks = new KeyedLock();

  constructor(
    private readonly layout: StorageLayout,
    private readonly workspaces: WorkspaceStore,
  ) {}

  create(target: WriteTarget, name: string, draft: SkillDraft): Promise<Skill> {
    return this.locked(target, name, async (dir) => {
      if (await readText(join(dir, name, SKILL_FILE))) {
        throw new Conflict(
          "skill_exists",
          `A ${target.scope} skill named "${name}" exists; update it instead.`,
        );
      }
      return this.save(target, dir, name, render(name, draft));
    });
  }

  update(target: WriteTarget, name: string, update: SkillUpdate): Promise<Skill> {
    return this.locked(target, name, async (dir) => {
      const current = toDraft(await this.current(target, dir, name));
      const draft: SkillDraft =
        update.intent === "replace_body"
          ? { ...current, body: update.body }
          : {
              ...current,
              description: update.description ?? current.description,
              loading: update.loading ?? current.loading,
              tools: update.tools ?? current.tools,
            };
      return this.save(target, dir, name, render(name, draft));
    });
  }

  delete(target: WriteTarget, name: string): Promise<void> {
    return this.locked(target, name, async (dir) => {
      await this.current(target, dir, name);
      const doomed = join(dir, `${TEMP_PREFIX}deleted-${name}`);
      await rename(join(dir, name), doomed);
      await rm(doomed, { recursive: true, force: true });
    });
  }

  async history(target: WriteTarget, name: string): Promise<SkillVersion[]> {
    const dir = this.scopeDir(target, name, "read");
    let entries: string[];
    try {
      entries = await readdir(join(dir, HISTORY_DIR, name));
    } catch {
      entries = [];
    }
    const versions = await Promise.all(
      entries
        .filter((e) => /^\d+\.json$/.test(e))
        .map(
          async (e) => JSON.parse(await readFile(join(dir, HISTORY_DIR, name, e), "utf8")) as SkillVersion,
        ),
    );
    if (versions.length === 0) throw skillNotFound(target, name);
    return versions.sort((a, b) => a.version - b.version);
  }

  async version(target: WriteTarget, name: string, version: number): Promise<string> {
    const dir = this.scopeDir(target, name, "read");
    const text = Number.isInteger(version)
      ? await readText(join(dir, HISTORY_DIR, name, `${version}.md`))
      : undefined;
    if (text === undefined)
      throw new NotFound("skill_version_not_found", `"${name}" has no version ${version}.`);
    return text;
  }

  private async save(target: WriteTarget, dir: string, name: string, text: string): Promise<Skill> {
    const skill = parseOrRefuse(text, target);
    const versions = join(dir, HISTORY_DIR, name);
    if (target.scope === "workspace") {
      // Inside a workspace nothing is created recursively: if it was archived, this fails.
      try {
        await makeFolderIfMissing(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT")
          throw new WorkspaceNotFound(target.workspaceId);
        throw error;
      }
    }
    await mkdir(join(dir, name), { recursive: true });
    await mkdir(versions, { recursive: true });
    const next = (await readdir(versions)).filter((e) => e.endsWith(".md")).length + 1;
    await writeFileAtomic(join(versions, `${next}.md`), text);
    await writeFileAtomic(
      join(versions, `${next}.json`),
      JSON.stringify({ version: next, savedAt: new Date().toISOString() }),
    );
    await writeFileAtomic(join(dir, name, SKILL_FILE), text);
    return skill;
  }

  private async current(target: WriteTarget, dir: string, name: string): Promise<Skill> {
    const text = await readText(join(dir, name, SKILL_FILE));
    if (text === undefined) throw skillNotFound(target, name);
    return parseOrRefuse(text, target);
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
      throw new Forbidden(
        "Only a workspace admin can change workspace skills; write a user skill for yourself instead.",
      );
    }
    return this.layout.workspaceSkillsDir(target.workspaceId);
  }
}

export function isWritableScope(value: unknown): value is WritableScope {
  return WRITABLE_SCOPES.includes(value as WritableScope);
}

function toDraft(skill: Skill): SkillDraft {
  const { description, body, loading, tools, provenance } = skill;
  // A skill read from a writable scope is never vendored: that is stamped only on platform skills.
  return {
    description,
    body,
    loading,
    tools,
    provenance: provenance === "vendored" ? undefined : provenance,
  };
}

function render(name: string, draft: SkillDraft): string {
  const atrium: AtriumMetadata = {};
  if (draft.loading) atrium.loading = draft.loading;
  if (draft.tools && draft.tools.length > 0) atrium.tools = draft.tools;
  if (draft.provenance) atrium.provenance = draft.provenance;
  const data: Record<string, unknown> = { name, description: draft.description };
  if (Object.keys(atrium).length > 0) data.metadata = { atrium };
  return matter.stringify(`${draft.body.trim()}\n`, data);
}

function parseOrRefuse(text: string, target: WriteTarget): Skill {
  try {
    return parseSkill(text, target.scope);
  } catch (error) {
    if (error instanceof SkillInvalid) throw new InvalidInput(`Skill refused: ${error.message}.`);
    throw error;
  }
}

function skillNotFound(target: WriteTarget, name: string): NotFound {
  return new NotFound("skill_not_found", `No ${target.scope} skill named "${name}".`);
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
