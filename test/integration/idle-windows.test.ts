import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDLE_EVICT_MS } from "../../src/server.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// The real time, so the files the touches write are not stamped in the instance's future.
const time = new FakeTime(Date.now());
let instance: TestAtrium;
let ws: string;

/** Two idle windows (a sweep runs every half window), three times over, every timer due fired. */
async function passIdleWindows(): Promise<void> {
  for (let pass = 0; pass < 3; pass++) await time.advance(2 * IDLE_EVICT_MS);
}

beforeAll(async () => {
  instance = await startTestAtrium({ clock: time.clock, timers: time.timers });
  ws = await bootstrapWorkspace(instance, "alice");
  await passIdleWindows();
});

afterAll(async () => {
  await instance?.stop();
});

describe("a workspace touched once, then idle (bench/memory)", () => {
  it("arms its caches' sweeps on the instance's timers, and holds nothing once every idle window has passed", async () => {
    const quiet = time.armed();
    const client = await instance.mcpClient("alice", ws);
    await client.listTools();
    await client.close();
    for (const path of ["files", "catalog", "skills", "tasks", "conversations"]) {
      const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/${path}`);
      expect(response.status, path).toBe(200);
    }
    // The registry, file index, catalog entries, skill listings, tasks and conversation index:
    // each cache a touch filled waits on these timers, not on Node's own, which this clock never moves.
    expect(time.armed() - quiet).toBeGreaterThanOrEqual(6);
    await passIdleWindows();
    expect(instance.atrium.registries.size).toBe(0);
    // Each sweep re-arms only while its cache holds something: every one let go.
    expect(time.armed()).toBe(quiet);
  });
});
