import { describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";

// An IdleCache's sweep is armed on the instance's timers while the cache holds something; a
// graceful stop closes every cache, so nothing it left armed fires later on a stopped instance.
describe("a gracefully stopped instance", () => {
  it("leaves no idle sweep armed on its timers, the file index's and the catalog's included", async () => {
    const time = new FakeTime(Date.now());
    const instance = await startTestAtrium({ clock: time.clock, timers: time.timers });
    const ws = await bootstrapWorkspace(instance, "alice");
    for (const path of ["files", "catalog"]) {
      const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/${path}`);
      expect(response.status, path).toBe(200);
    }
    expect(time.armed()).toBeGreaterThan(0);
    await instance.stop();
    expect(time.armed()).toBe(0);
  });
});
