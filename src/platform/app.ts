import type { McpServer } from "@modelcontextprotocol/server";
import type { Hono } from "hono";
import type { RouteDeps } from "../http/context.ts";
import type { AppEnv } from "../web/app-env.ts";
import type { PlatformServices } from "./services.ts";

/**
 * A platform app is one unit: its MCP server (one per workspace, on the in-memory arm) and
 * its REST routes. Adding an app is adding a folder and one line in `platform/index.ts`.
 */
export interface PlatformApp {
  /** The source name: the `<source>` of `<source>__<tool>`. */
  name: string;
  createServer(workspaceId: string, services: PlatformServices): McpServer;
  /**
   * Routes of one workspace, paths relative to `/v1/workspaces/:ws`, mounted behind the workspace
   * gate: a handler here always finds the caller's admission, and cannot be reached without it.
   */
  workspaceRoutes?(deps: RouteDeps): Hono<AppEnv>;
  /** Routes outside any one workspace (a file by its bare id), each checking membership itself. */
  routes?(deps: RouteDeps): Hono<AppEnv>;
}
