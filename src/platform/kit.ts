import type { ConfigSections, InstanceConfig } from "../instance/schema.ts";
import type { IdleCache } from "../sources/idle-cache.ts";
import { SourceRegistry } from "../sources/registry.ts";
import { isPersonalSourceName, isSourceName } from "../sources/tool-names.ts";
import type { ArchiveReleaser } from "../storage/archive-retention.ts";
import type {
  AppContext,
  ArchiveReleaseContext,
  PlatformApp,
  PublishedSkillList,
  PublishedSkills,
  StartedApp,
  WorkspaceSources,
} from "./app.ts";
import { AppSource } from "./app-source.ts";

/** What every app's context shares; each app adds its settings, its storage and its log. */
export type KernelContext = Omit<AppContext<unknown>, "settings" | "storage" | "appNames">;

/**
 * Each app's archive releaser, in the apps' order (ADR 0113): the server's retention chore and
 * `atrium archive purge` run the same ones.
 */
export function archiveReleasers(
  apps: readonly PlatformApp[],
  context: Omit<ArchiveReleaseContext, "storage">,
): ArchiveReleaser[] {
  return apps.flatMap((app) =>
    app.archiveReleaser
      ? [app.archiveReleaser({ ...context, storage: context.layout.partition(app.partition ?? app.name) })]
      : [],
  );
}

/** The instance.json sections the apps declare, for the loader to validate the file with. */
export function configSections(apps: readonly PlatformApp[]): ConfigSections {
  return Object.fromEntries(apps.flatMap((app) => (app.config ? [[app.name, app.config]] : [])));
}

/**
 * Starts each app in order with its own context. Two apps may not share a name (it is the
 * source of their tools and their instance.json section) or a workspace folder. Each started app
 * is in `started` as soon as it is, so a boot that fails half-way can stop the ones that ran.
 */
export async function startApps(
  apps: readonly PlatformApp[],
  kernel: KernelContext,
  config: Pick<InstanceConfig, "sections" | "baseDir">,
  started: StartedApp[] = [],
): Promise<StartedApp[]> {
  const names = new Set<string>();
  const partitions = new Set<string>();
  for (const app of apps) {
    const partition = app.partition ?? app.name;
    if (!isSourceName(app.name) || isPersonalSourceName(app.name)) {
      throw new Error(`A platform app's name is lowercase words, not "${app.name}".`);
    }
    if (names.has(app.name)) throw new Error(`Two platform apps are named "${app.name}".`);
    if (partitions.has(partition)) throw new Error(`Two platform apps keep their records in "${partition}".`);
    names.add(app.name);
    partitions.add(partition);
    const settings = app.config?.resolve(config.sections[app.name], { baseDir: config.baseDir });
    const running = await app.start({
      ...kernel,
      settings,
      storage: kernel.layout.partition(partition),
      appNames: apps.map((other) => other.name),
      log: kernel.log.child({ app: app.name }),
    });
    // One source per app for the whole instance (adr/0057), its tools called directly (adr/0058).
    started.push({ ...running, name: app.name, source: new AppSource(app.name, running.tools) });
  }
  return started;
}

/** Closes each app's one source, after every registry that lent it is gone. */
export async function closeAppSources(apps: readonly StartedApp[]): Promise<void> {
  await Promise.allSettled(apps.map((app) => app.source.close()));
}

/** A workspace's registry: every started app's source, lent by the instance, then the apps' other sources. */
export async function createWorkspaceRegistry(
  workspaceId: string,
  apps: readonly StartedApp[],
): Promise<SourceRegistry> {
  const registry = new SourceRegistry(
    workspaceId,
    apps.map((app) => app.source),
  );
  for (const app of apps) {
    for (const source of (await app.sources?.(workspaceId)) ?? []) registry.add(source);
  }
  return registry;
}

/** One place apps publish skills into; what each publisher gives is listed together. */
export function publishedSkills(): PublishedSkills {
  const publishers: ((workspaceId: string) => Promise<PublishedSkillList>)[] = [];
  return {
    publish: (publisher) => void publishers.push(publisher),
    list: async (workspaceId) => {
      const lists = await Promise.all(publishers.map((p) => p(workspaceId)));
      return { skills: lists.flatMap((l) => l.skills), problems: lists.flatMap((l) => l.problems) };
    },
  };
}

/** Changes reach a registry that is loaded; one that is not will be built with them. */
export function workspaceSources(registries: IdleCache<SourceRegistry>): WorkspaceSources {
  return {
    async replace(workspaceId, build) {
      const registry = await registries.peek(workspaceId);
      return registry?.replace(await build());
    },
    async remove(workspaceId, name, owner) {
      await (await registries.peek(workspaceId))?.remove(name, owner);
    },
  };
}
