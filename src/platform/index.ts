import { McpSource } from "../sources/mcp-source.ts";
import { SourceRegistry } from "../sources/registry.ts";
import type { PlatformApp } from "./app.ts";
import { filesApp } from "./files/app.ts";
import type { PlatformServices } from "./services.ts";
import { skillsApp } from "./skills/app.ts";

/** The platform apps, in the order their tools are listed. */
export const PLATFORM_APPS: readonly PlatformApp[] = [filesApp, skillsApp];

/** A workspace's registry: every platform app as an in-memory source. */
export function createWorkspaceRegistry(
  workspaceId: string,
  services: PlatformServices,
  apps: readonly PlatformApp[] = PLATFORM_APPS,
): SourceRegistry {
  const registry = new SourceRegistry(workspaceId);
  for (const app of apps) {
    registry.add(
      new McpSource(app.name, {
        kind: "in-memory",
        createServer: () => app.createServer(workspaceId, services),
      }),
    );
  }
  return registry;
}
