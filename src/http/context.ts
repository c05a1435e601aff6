import type { UserDirectory } from "../identity/users.ts";
import type { WorkspaceEventLog } from "../kernel/event-log.ts";
import type { EventPublisher } from "../kernel/events.ts";
import type { Timers } from "../kernel/timers.ts";
import type { StartedApp } from "../platform/app.ts";
import type { ToolDispatch } from "../sources/dispatch.ts";
import type { WorkspaceGuidance } from "../sources/guidance.ts";
import type { IdleCache } from "../sources/idle-cache.ts";
import type { SourceRegistry } from "../sources/registry.ts";
import type { Router } from "../sources/router.ts";
import type { FirstWorkspace } from "../workspace/first-workspace.ts";
import type { Invitations } from "../workspace/invitations.ts";
import type { WorkspaceStore } from "../workspace/store.ts";
import type { McpEndpoint } from "./mcp/endpoint.ts";

/** Everything route handlers need, built once per instance. */
export interface RouteDeps {
  workspaces: WorkspaceStore;
  users: UserDirectory;
  invitations: Invitations;
  firstWorkspace: FirstWorkspace;
  router: Router;
  /** The platform apps this instance runs: PLATFORM_APPS unless a test adds one. */
  apps: readonly StartedApp[];
  dispatch: ToolDispatch;
  registries: IdleCache<SourceRegistry>;
  /** What the apps tell each caller besides their tools, composed. */
  guidance: WorkspaceGuidance;
  /** The public base URL; known once the listener is bound (port 0 in tests). */
  publicUrl: () => string;
  maxBodyBytes: number;
  /** Where what happened is announced (kernel/events.ts). */
  events: EventPublisher;
  /** The workspace event streams: sequence, replay buffer and live followers (docs/events.md). */
  eventLog: WorkspaceEventLog;
  /**
   * The MCP calls in flight, which a change that ends someone's access cancels, with the calls
   * the dispatch holds (cancel-calls.ts, adr/0154).
   */
  calls: Pick<McpEndpoint, "cancelCalls">;
  /** How anything a route schedules waits (a stream's heartbeat); tests move a fake clock. */
  timers: Timers;
}
