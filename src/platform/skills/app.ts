import type { PlatformApp, PublishedSkill } from "../app.ts";
import { type SkillSettings, skillsConfig } from "./config.ts";
import { createWorkspaceGuidance } from "./guidance.ts";
import type { Skill } from "./model.ts";
import { skillRoutes } from "./routes.ts";
import { createSkillsTools } from "./server.ts";
import { SkillService } from "./service.ts";
import { SkillWriter } from "./writer.ts";

export const skillsApp: PlatformApp<SkillSettings> = {
  name: "skills",
  config: skillsConfig,
  start({ settings, layout, workspaces, events, clock, log, publishedSkills }) {
    const skills = new SkillService(layout, settings, log);
    // What other apps publish (a connected server's instructions) is the server scope, lowest of all.
    // Each published object becomes one skill object, the same on every call while its publisher
    // keeps it, so the service can tell that nothing changed (service.ts).
    const asSkill = new WeakMap<PublishedSkill, Skill>();
    skills.addServerSource({
      list: async (workspaceId) =>
        (await publishedSkills.list(workspaceId)).map((published) => {
          let skill = asSkill.get(published);
          if (!skill) {
            skill = { ...published, scope: "server", provenance: "connector", loading: "dynamic" };
            asSkill.set(published, skill);
          }
          return skill;
        }),
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
      // The instructions, tool notes, resources and Skills Extension packages of every caller.
      guidance: createWorkspaceGuidance(skills),
    };
  },
};
