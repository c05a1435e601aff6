import { fileURLToPath } from "node:url";
import type { Logger } from "../../log.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import type { SkillSettings } from "./config.ts";
import { composeInstructions } from "./instructions.ts";
import type { Skill, SkillProblem } from "./model.ts";
import { resolveSkills } from "./resolve.ts";
import { type IdleSweep, ScopeCache, type ScopeListing } from "./scope-cache.ts";

/** The platform's own skills ship in the repository's `skills/` folder. */
export const PLATFORM_SKILLS_DIR = fileURLToPath(new URL("../../../skills/", import.meta.url));

/**
 * Skills connected remote servers publish in a workspace, and the ones left out. Each skill and
 * problem is the same object on every call while it stands, so a kept resolution can tell that
 * nothing changed.
 */
export interface ServerSkillSource {
  list(workspaceId: string): Promise<{ skills: Skill[]; problems: SkillProblem[] }>;
}

export interface ResolvedSkills {
  skills: Skill[];
  problems: SkillProblem[];
}

/** The caller's own scope folders, computed (and their ids checked) once per kept resolution. */
interface CallerDirs {
  user: string;
  workspace: string;
}

/** What one caller's resolution was built from, and what was built: kept while those are the same. */
interface Resolution {
  dirs: CallerDirs;
  inputs: readonly (ScopeListing | Skill | SkillProblem)[];
  resolved: ResolvedSkills;
  /**
   * Composed on first use: bodies read once per resolution, shared by the requests that ask
   * meanwhile; dropped if it fails, so a transient read error is not kept.
   */
  instructions?: Promise<string>;
}

/** Callers whose resolution is kept; each is a few hundred bytes. The oldest used goes first. */
const MAX_RESOLUTIONS = 2_000;

/**
 * Resolves the skills a caller sees in a workspace, from every scope. Each scope folder's listing
 * is kept and checked against the folders' and files' modification times on each call
 * (scope-cache.ts), so a skill an operator drops on disk is picked up by the next request; the
 * resolved set and the composed instructions are kept while every listing they came from is the
 * same object (adr/0051).
 */
export class SkillService {
  private readonly serverSources: ServerSkillSource[] = [];
  // Each problem is logged once per process, not on every request that meets it.
  private readonly reported = new Set<string>();
  private readonly resolutions = new Map<string, Resolution>();
  private readonly scopes: ScopeCache;

  /** With `idle`, the instance's clock and timers, idle workspaces' listings and resolutions go (scope-cache.ts). */
  constructor(
    private readonly layout: StorageLayout,
    private readonly settings: SkillSettings,
    private readonly log: Logger,
    private readonly platformDir = PLATFORM_SKILLS_DIR,
    idle?: IdleSweep,
  ) {
    // A resolution is kept only while every listing it was built from is: kept on, it held the
    // listings the scope cache let go by its byte budget or idle time, one per workspace a person lists.
    const dropped = (listing: ScopeListing) => {
      for (const [key, resolution] of this.resolutions)
        if (resolution.inputs.includes(listing)) this.resolutions.delete(key);
    };
    this.scopes = new ScopeCache(undefined, undefined, dropped, undefined, idle);
  }

  addServerSource(source: ServerSkillSource): void {
    this.serverSources.push(source);
  }

  /**
   * Drops what is kept of one scope folder, so a write through Atrium shows without waiting for a
   * stamp to move; a resolution that read it sees a new listing and is made again.
   */
  forget(dir: string): void {
    this.scopes.forget(dir);
  }

  /** A graceful stop: the idle sweep's timer ends. */
  stop(): void {
    this.scopes.stop();
  }

  async resolve(workspaceId: string, principalId: string): Promise<ResolvedSkills> {
    return (await this.resolution(workspaceId, principalId)).resolved;
  }

  async instructions(workspaceId: string, principalId: string): Promise<string> {
    const resolution = await this.resolution(workspaceId, principalId);
    if (resolution.instructions) return resolution.instructions;
    const composing = composeInstructions(resolution.resolved.skills, this.settings.maxInstructionsBytes);
    resolution.instructions = composing;
    // A failed composition (a body read met EMFILE or EIO, which moves no stamp) is not kept: the
    // requests sharing it fail clearly and the next one composes anew (instructions.ts bodyOrNot).
    composing.catch(() => {
      if (resolution.instructions === composing) resolution.instructions = undefined;
    });
    return composing;
  }

  private async resolution(workspaceId: string, principalId: string): Promise<Resolution> {
    const key = `${workspaceId}\0${principalId}`;
    const dirs = this.resolutions.get(key)?.dirs ?? {
      user: this.layout.userSkillsDir(principalId),
      workspace: this.layout.workspaceSkillsDir(workspaceId),
    };
    const reads = await Promise.all([
      this.scopes.read(dirs.user, "user"),
      this.scopes.read(dirs.workspace, "workspace"),
      this.settings.orgDir ? this.scopes.read(this.settings.orgDir, "org") : NO_SKILLS,
      this.scopes.read(this.platformDir, "platform", "vendored"),
    ]);
    const servers = await Promise.all(this.serverSources.map((s) => s.list(workspaceId)));
    const published = servers.flatMap((server) => server.skills);
    const left = servers.flatMap((server) => server.problems);
    const inputs = [...reads, ...published, ...left];
    const kept = this.resolutions.get(key);
    this.resolutions.delete(key);
    if (kept && sameItems(kept.inputs, inputs)) {
      this.resolutions.set(key, kept);
      return kept;
    }
    const problems = reads.flatMap((r) => r.problems);
    for (const problem of problems) {
      const reportKey = `${workspaceId}\0${problem.scope}\0${problem.name}\0${problem.message}`;
      if (this.reported.has(reportKey)) continue;
      this.reported.add(reportKey);
      this.log.warn({ workspace: workspaceId, ...problem }, "skill skipped");
    }
    const skills = resolveSkills([...reads.flatMap((r) => r.skills), ...published]);
    // A publisher logs what it leaves out itself.
    const resolution: Resolution = { dirs, inputs, resolved: { skills, problems: [...problems, ...left] } };
    // A listing let go while this one was read would never be heard of again: not kept then.
    if (!reads.every((read) => read === NO_SKILLS || this.scopes.keeps(read))) return resolution;
    this.resolutions.set(key, resolution);
    if (this.resolutions.size > MAX_RESOLUTIONS)
      this.resolutions.delete(this.resolutions.keys().next().value as string);
    return resolution;
  }
}

const NO_SKILLS: ScopeListing = { skills: [], problems: [] };

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
