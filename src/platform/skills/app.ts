import type { PlatformApp } from "../app.ts";
import { createSkillsServer } from "./server.ts";

export const skillsApp: PlatformApp = {
  name: "skills",
  createServer: createSkillsServer,
};
