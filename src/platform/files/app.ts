import type { PlatformApp } from "../app.ts";
import { type FilesSettings, filesConfig } from "./config.ts";
import { fileRoutes, fileWorkspaceRoutes } from "./routes.ts";
import { createFilesTools } from "./server.ts";
import { FileStore } from "./store.ts";

export const filesApp: PlatformApp<FilesSettings> = {
  name: "files",
  config: filesConfig,
  start({ settings, storage, events, clock, timers, workspaces, users, log }) {
    const files = new FileStore(storage, settings.maxUploadBytes, events, clock, log, timers);
    return {
      tools: createFilesTools(files),
      workspaceRoutes: fileWorkspaceRoutes(files),
      routes: fileRoutes(files, workspaces, users),
      streamedBodies: [{ method: "POST", path: "/files", maxBytes: files.maxBytes }],
      leftovers: files,
      stop: () => files.close(),
    };
  },
};
