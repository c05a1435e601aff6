import { afterAll, beforeAll, expect, it } from "vitest";
import type { PlatformApp, RunningApp } from "../../src/platform/app.ts";
import { connectionsApp } from "../../src/platform/connections/app.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// An archive tells each app, before it answers, so what an app holds in memory for the workspace
// (an OAuth connection's secrets: live-workspaces.test.ts) goes with it, not at a later loop's pass
// (ADR 0155, amended). The real connections app runs here, watched as the archive route tells it.

let instance: TestAtrium;
let connections: RunningApp | undefined;
/** Each workspace the connections app was told of, and whether the index had forgotten it by then. */
const told: Array<{ workspaceId: string; indexed: boolean }> = [];

const watchedConnections: PlatformApp = {
  ...connectionsApp,
  async start(context) {
    const running = await connectionsApp.start(context as Parameters<typeof connectionsApp.start>[0]);
    connections = running;
    return {
      ...running,
      archived: (workspaceId) => {
        told.push({ workspaceId, indexed: context.workspaces.get(workspaceId) !== undefined });
        running.archived?.(workspaceId);
      },
    };
  },
};

beforeAll(async () => {
  instance = await startTestAtrium({
    apps: PLATFORM_APPS.map((app) => (app.name === connectionsApp.name ? watchedConnections : app)),
  });
});

afterAll(async () => {
  await instance?.stop();
});

it("an archive tells the connections app, once the workspace is out of the index, before it answers", async () => {
  const ws = await bootstrapWorkspace(instance, "alice");
  const other = await bootstrapWorkspace(instance, "alice");
  expect(typeof connections?.archived).toBe("function");
  expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
  expect(told).toEqual([{ workspaceId: ws, indexed: false }]);
  // A refused archive tells nothing.
  expect((await instance.rest("bob", "DELETE", `/v1/workspaces/${other}`)).status).toBe(404);
  expect(told).toEqual([{ workspaceId: ws, indexed: false }]);
});
