import type { PlatformApp } from "../app.ts";
import { type SkillSettings, skillsConfig } from "./config.ts";
import { createWorkspaceGuidance } from "./guidance.ts";
import { skillRoutes } from "./routes.ts";
import { createSkillsServer } from "./server.ts";
import { SkillService } from "./service.ts";
import { SkillWriter } from "./writer.ts";

export const skillsApp: PlatformApp<SkillSettings> = {
  name: "skills",
  config: skillsConfig,
  start({ settings, layout, workspaces, events, clock, log, publishedSkills }) {
    const skills = new SkillService(layout, settings, log);
    // What other apps publish (a connected server's instructions) is the server scope, lowest of all.
    skills.addServerSource({
      list: async (workspaceId) =>
        (await publishedSkills.list(workspaceId)).map((published) => ({
          ...published,
          scope: "server" as const,
          provenance: "connector" as const,
          loading: "dynamic" as const,
        })),
    });
    const writer = new SkillWriter(layout, workspaces, events, clock);
    return {
      createServer: (workspaceId) => createSkillsServer(workspaceId, skills, writer),
      workspaceRoutes: skillRoutes(skills, writer),
      leftovers: writer,
      // The instructions, tool notes, resources and Skills Extension packages of every caller.
      guidance: createWorkspaceGuidance(skills),
    };
  },
};
