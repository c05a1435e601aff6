import type { PlatformApp, PublishedSkill, PublishedSkillProblem } from "../app.ts";
import { type SkillSettings, skillsConfig } from "./config.ts";
import { createWorkspaceGuidance } from "./guidance.ts";
import type { Skill, SkillProblem } from "./model.ts";
import { skillRoutes } from "./routes.ts";
import { createSkillsTools } from "./server.ts";
import { SkillService } from "./service.ts";
import { SkillWriter } from "./writer.ts";

export const skillsApp: PlatformApp<SkillSettings> = {
  name: "skills",
  config: skillsConfig,
  start({ settings, layout, workspaces, events, clock, timers, log, publishedSkills }) {
    const skills = new SkillService(layout, settings, log, undefined, { clock, timers });
    // What other apps publish (a connected server's instructions) is the server scope, lowest of all.
    // Each published object becomes one skill object, the same on every call while its publisher
    // keeps it, so the service can tell that nothing changed (service.ts).
    // What a publisher left out is listed with the skills' problems, as the server scope's.
    const asSkill = new WeakMap<PublishedSkill, Skill>();
    const asProblem = new WeakMap<PublishedSkillProblem, SkillProblem>();
    skills.addServerSource({
      list: async (workspaceId) => {
        const published = await publishedSkills.list(workspaceId);
        return {
          skills: published.skills.map((one) => {
            let skill = asSkill.get(one);
            if (!skill) {
              skill = { ...one, scope: "server", provenance: "connector", loading: "dynamic" };
              asSkill.set(one, skill);
            }
            return skill;
          }),
          problems: published.problems.map((one) => {
            let problem = asProblem.get(one);
            if (!problem) {
              problem = { scope: "server", ...one };
              asProblem.set(one, problem);
            }
            return problem;
          }),
        };
      },
    });
    // Written through Atrium: the next request reads that scope's folder again, whatever its
    // times say. Only that folder: every other workspace's and person's listings stay kept.
    events.subscribe({ types: ["skill.changed"] }, (event) => {
      if (event.type !== "skill.changed") return;
      skills.forget(
        event.scope === "user"
          ? layout.userSkillsDir(event.ownerId)
          : layout.workspaceSkillsDir(event.workspaceId),
      );
    });
    const writer = new SkillWriter(layout, workspaces, events, clock, log);
    return {
      tools: createSkillsTools(skills, writer),
      workspaceRoutes: skillRoutes(skills, writer),
      leftovers: writer,
      stop: async () => skills.stop(),
      // The instructions, tool notes, resources and Skills Extension packages of every caller.
      guidance: createWorkspaceGuidance(skills),
    };
  },
};
