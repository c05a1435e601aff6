import { fileURLToPath } from "node:url";
import type { Logger } from "../../log.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import type { SkillSettings } from "./config.ts";
import { composeInstructions } from "./instructions.ts";
import type { Skill, SkillProblem } from "./model.ts";
import { resolveSkills } from "./resolve.ts";
import { readSkillDir, SkillFileCache } from "./skill-dirs.ts";

/** The platform's own skills ship in the repository's `skills/` folder. */
export const PLATFORM_SKILLS_DIR = fileURLToPath(new URL("../../../skills/", import.meta.url));

/** Skills a connected remote server publishes; connections will provide one per workspace. */
export interface ServerSkillSource {
  list(workspaceId: string): Promise<Skill[]>;
}

export interface ResolvedSkills {
  skills: Skill[];
  problems: SkillProblem[];
}

/**
 * Resolves the skills a caller sees in a workspace, from every scope. Scope folders are listed
 * on each call, so a skill an operator drops on disk is picked up by the next request; a
 * file is parsed again only when its size or modification time changes.
 */
export class SkillService {
  private readonly serverSources: ServerSkillSource[] = [];
  // Each problem is logged once per process, not on every request that meets it.
  private readonly reported = new Set<string>();
  private readonly files = new SkillFileCache();

  constructor(
    private readonly layout: StorageLayout,
    private readonly settings: SkillSettings,
    private readonly log: Logger,
    private readonly platformDir = PLATFORM_SKILLS_DIR,
  ) {}

  addServerSource(source: ServerSkillSource): void {
    this.serverSources.push(source);
  }

  async resolve(workspaceId: string, principalId: string): Promise<ResolvedSkills> {
    const reads = await Promise.all([
      readSkillDir(this.layout.userSkillsDir(principalId), "user", undefined, this.files),
      readSkillDir(this.layout.workspaceSkillsDir(workspaceId), "workspace", undefined, this.files),
      this.settings.orgDir
        ? readSkillDir(this.settings.orgDir, "org", undefined, this.files)
        : { skills: [], problems: [] },
      readSkillDir(this.platformDir, "platform", "vendored", this.files),
    ]);
    const published = await Promise.all(this.serverSources.map((s) => s.list(workspaceId)));
    const problems = reads.flatMap((r) => r.problems);
    for (const problem of problems) {
      const key = `${workspaceId}\0${problem.scope}\0${problem.name}\0${problem.message}`;
      if (this.reported.has(key)) continue;
      this.reported.add(key);
      this.log.warn({ workspace: workspaceId, ...problem }, "skill skipped");
    }
    return { skills: resolveSkills([...reads.flatMap((r) => r.skills), ...published.flat()]), problems };
  }

  async instructions(workspaceId: string, principalId: string): Promise<string> {
    const { skills } = await this.resolve(workspaceId, principalId);
    return composeInstructions(skills, this.settings.maxInstructionsBytes);
  }
}
