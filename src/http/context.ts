import type { UserDirectory } from "../identity/users.ts";
import type { WorkspaceEventLog } from "../kernel/event-log.ts";
import type { Timers } from "../kernel/timers.ts";
import type { PlatformApp } from "../platform/app.ts";
import type { PlatformServices } from "../platform/services.ts";
import type { WorkspaceGuidance } from "../platform/skills/guidance.ts";
import type { ToolDispatch } from "../sources/dispatch.ts";
import type { IdleCache } from "../sources/idle-cache.ts";
import type { SourceRegistry } from "../sources/registry.ts";
import type { Router } from "../sources/router.ts";
import type { FirstWorkspace } from "../workspace/first-workspace.ts";
import type { Invitations } from "../workspace/invitations.ts";
import type { WorkspaceStore } from "../workspace/store.ts";

/** Everything route handlers need, built once per instance. */
export interface RouteDeps {
  workspaces: WorkspaceStore;
  users: UserDirectory;
  invitations: Invitations;
  firstWorkspace: FirstWorkspace;
  router: Router;
  /** The platform apps this instance serves: PLATFORM_APPS unless a test adds one. */
  apps: readonly PlatformApp[];
  dispatch: ToolDispatch;
  registries: IdleCache<SourceRegistry>;
  services: PlatformServices;
  guidance: WorkspaceGuidance;
  /** The public base URL; known once the listener is bound (port 0 in tests). */
  publicUrl: () => string;
  maxBodyBytes: number;
  /** The workspace event streams: sequence, replay buffer and live followers (docs/events.md). */
  eventLog: WorkspaceEventLog;
  /** How anything a route schedules waits (a stream's heartbeat); tests move a fake clock. */
  timers: Timers;
}
