import type { PlatformApp } from "../app.ts";
import { skillRoutes } from "./routes.ts";
import { createSkillsServer } from "./server.ts";

export const skillsApp: PlatformApp = {
  name: "skills",
  createServer: createSkillsServer,
  workspaceRoutes: skillRoutes,
};
