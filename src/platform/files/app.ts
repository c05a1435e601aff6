import type { PlatformApp } from "../app.ts";
import { fileRoutes, fileWorkspaceRoutes } from "./routes.ts";
import { createFilesServer } from "./server.ts";

export const filesApp: PlatformApp = {
  name: "files",
  createServer: createFilesServer,
  workspaceRoutes: fileWorkspaceRoutes,
  routes: fileRoutes,
};
