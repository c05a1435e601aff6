import type { PlatformApp } from "../app.ts";
import { fileRoutes } from "./routes.ts";
import { createFilesServer } from "./server.ts";

export const filesApp: PlatformApp = {
  name: "files",
  createServer: createFilesServer,
  routes: fileRoutes,
};
