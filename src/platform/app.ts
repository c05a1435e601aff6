import type { Hono } from "hono";
import type { UserDirectory } from "../identity/users.ts";
import type { ConfigSection } from "../instance/schema.ts";
import type { Clock } from "../kernel/clock.ts";
import type { EventBus } from "../kernel/events.ts";
import type { ExclusiveLeases } from "../kernel/leases.ts";
import type { Scheduler } from "../kernel/scheduler.ts";
import type { Timers } from "../kernel/timers.ts";
import type { Logger } from "../log.ts";
import type { ToolDispatch } from "../sources/dispatch.ts";
import type { WorkspaceGuidance } from "../sources/guidance.ts";
import type { Source } from "../sources/source.ts";
import type { ArchiveReleaser } from "../storage/archive-retention.ts";
import type { CredentialStore } from "../storage/credential-store.ts";
import type { PartitionPaths, StorageLayout } from "../storage/paths.ts";
import type { LeftoverRules } from "../storage/recovery.ts";
import type { AppEnv } from "../web/app-env.ts";
import type { WorkspaceStore } from "../workspace/store.ts";
import type { AppTools } from "./app-tools.ts";

/**
 * A platform app is one module: it declares its name, its section of instance.json and its
 * folder in each workspace, and `start` builds its stores from the kernel context and returns
 * its tools and routes. Adding an app is its folder and one line in `platform/index.ts`
 * (docs/platform-apps.md; test/integration/throwaway-app.test.ts proves it).
 */
export interface PlatformApp<Settings = unknown> {
  /** The source name: the `<source>` of `<source>__<tool>`. */
  name: string;
  /** instance.json's `<name>` section, validated with the rest of the file at boot. */
  config?: ConfigSection<Settings>;
  /** The app's folder under each workspace, `<ws>/<partition>/`; the app's name when not given. */
  partition?: string;
  start(context: AppContext<Settings>): RunningApp | Promise<RunningApp>;
  /**
   * What removes the app's state kept outside a workspace's folder for it (sealed credentials,
   * schedule entries), once that workspace's archive `archivedName` is about to be removed, past
   * `storage.archiveRetentionDays` or by `atrium archive purge` (ADR 0113, 0142). Read from the
   * archived copy, which is removed only after every app's. Built from this narrow context, not a
   * started app, so the command can run it with no server started.
   */
  archiveReleaser?(context: ArchiveReleaseContext): ArchiveReleaser;
}

/** What an app's archive releaser is built from. */
export type ArchiveReleaseContext = Pick<AppContext<unknown>, "storage" | "layout" | "credentials">;

/** What the kernel gives an app to build its stores from; the same objects for every app. */
export interface AppContext<Settings> {
  /** The app's section of instance.json with the app's defaults applied. */
  settings: Settings;
  /** Paths inside the app's own folder of each workspace. */
  storage: PartitionPaths;
  /** Every path under the data root, for an app whose records also live outside workspaces. */
  layout: StorageLayout;
  /** Workspaces and their members: `roleOf` is the one membership question. */
  workspaces: WorkspaceStore;
  /**
   * Whether an org admin deactivated a person, asked live by anything that acts for someone with no
   * request of theirs around it (a task run, a personal connection's loops; ADR 0042), as the
   * authenticate middleware does for a request.
   */
  users: Pick<UserDirectory, "isDeactivated">;
  /** Calls a tool as (person, workspace), with the same checks as an MCP request. */
  dispatch: ToolDispatch;
  /** Changes a workspace's live sources (a connection added, refreshed or removed). */
  sources: WorkspaceSources;
  /** Every platform app's name in this instance: no other source may take one. */
  appNames: readonly string[];
  /** Skills apps publish for a workspace (a connected server's instructions); the skills app reads them. */
  publishedSkills: PublishedSkills;
  events: EventBus;
  clock: Clock;
  timers: Timers;
  scheduler: Scheduler;
  /**
   * The one store of sealed secrets (a connection's static header value, OAuth tokens): a record
   * keeps the credential's id, never the value (ADR 0036).
   */
  credentials: CredentialStore;
  /** Work one holder in the instance does at a time per key (a connection's token refresh). */
  leases: ExclusiveLeases;
  /** The instance's public URL as it is now (a loopback port is known only once it listens). */
  publicUrl: () => string;
  /** The instance's log, with the app's name on every line. */
  log: Logger;
}

/** A started app: what the HTTP app, the MCP front door and recovery take from it. */
export interface RunningApp {
  /**
   * The app's tools, one table served to every workspace: each call's person and workspace come
   * from the router, from the gated request (adr/0057); calls reach a tool directly, its listing
   * comes from the table's SDK server (adr/0058).
   */
  tools: AppTools;
  /** Further sources the app gives a workspace (its connections), asked when its registry is built. */
  sources?(workspaceId: string): Promise<Source[]>;
  /**
   * Routes of one workspace, paths relative to `/v1/workspaces/:ws`, mounted behind the workspace
   * gate: a handler here always finds the caller's admission, and cannot be reached without it.
   */
  workspaceRoutes?: Hono<AppEnv>;
  /** Routes outside any one workspace (a file by its bare id), each checking membership itself. */
  routes?: Hono<AppEnv>;
  /** Workspace routes whose body is streamed to disk, with a larger limit than a JSON body's. */
  streamedBodies?: readonly StreamedBody[];
  /** What the app recovers after a crash, at boot and hourly (storage/recovery.ts). */
  leftovers?: LeftoverRules;
  /** What the app tells callers besides its tools (instructions, resources, skills). */
  guidance?: Partial<WorkspaceGuidance>;
  /**
   * Called once at boot after every app has started and crash recovery is done, before Atrium
   * listens: work that calls tools through the dispatch (a task's missed schedule) may begin.
   */
  ready?(): Promise<void>;
  /**
   * Called once a workspace is archived (out of the workspace index), among the archive's other
   * follow-ups and before the archive answers: the app lets go of what it keeps in memory for that
   * workspace (an OAuth connection's secrets). Its state on disk left with the folder; what it keeps
   * outside the folder goes with `archiveReleaser`. May be called again for the same workspace.
   */
  archived?(workspaceId: string): void;
  /**
   * Called once on a graceful stop, before the sources close: the app ends the work it runs with
   * no request around it (task runs) and records how it ended.
   */
  stop?(): Promise<void>;
  /**
   * Called once on a graceful stop when the requests have drained (or were cut off), before the
   * sources close: the app waits for what must end in this process, whenever it began (an exchange
   * of credentials whose answer is the only one). Waited for until the drain deadline and not
   * after a second signal; `letGo` aborts just before the root is let go, after which the app
   * starts and writes nothing.
   */
  drained?(letGo: AbortSignal): Promise<void>;
}

export interface StreamedBody {
  method: string;
  /** Relative to `/v1/workspaces/:ws`, e.g. `/files`. */
  path: string;
  maxBytes: number;
}

/** Guidance an app publishes as a server-scope skill: the lowest precedence of every scope. */
export interface PublishedSkill {
  name: string;
  description: string;
  body: string;
  /** Tool names or `source__*` patterns it is guidance for. */
  tools: string[];
}

/** A skill an app left out of what it publishes, and why: shown with the skills' problems. */
export interface PublishedSkillProblem {
  name: string;
  message: string;
}

/** What an app publishes in a workspace: its skills, and the ones it left out. */
export interface PublishedSkillList {
  skills: PublishedSkill[];
  problems: PublishedSkillProblem[];
}

/** Where apps publish skills per workspace, and the skills app reads them all. */
export interface PublishedSkills {
  publish(publisher: (workspaceId: string) => Promise<PublishedSkillList>): void;
  list(workspaceId: string): Promise<PublishedSkillList>;
}

/** A workspace's sources while its registry is loaded; a registry built later asks the apps. */
export interface WorkspaceSources {
  /**
   * Serves the source `build` makes in place of its namesake, answered to be closed by the caller
   * (SourceRegistry.replace). Built only where the workspace's registry is loaded: one that is not
   * builds its sources when it is, and a source built for no registry was read (its snapshot) for
   * nothing and never closed.
   */
  replace(workspaceId: string, build: () => Promise<Source>): Promise<Source | undefined>;
  /** `owner` names whose personal source (`my_…`) is removed; absent for a shared one. */
  remove(workspaceId: string, name: string, owner?: string): Promise<void>;
}

/** An app as the instance runs it: its name, what its start returned, and its one source. */
export interface StartedApp extends RunningApp {
  name: string;
  /** The app's tools as a source, lent to every workspace's registry, closed by the instance. */
  source: Source;
}
