import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium, workspaceWithConnectionAndTask } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { takenOverAtFirstRelease } from "../helpers/lock-takeover.ts";
import { startRemoteServer } from "../helpers/remote-server.ts";

// storage.archiveRetentionDays (ADR 0113): housekeeping removes an archived workspace once it is
// past the retention, and with it what apps keep for it outside its folder (its connections'
// sealed credentials, its tasks' schedule entries); a workspace still within it, and every other
// workspace's, stay.

const DAY_MS = 24 * 60 * 60 * 1000;
const SECRET = "sk-archive-retention";

async function credentialFiles(atrium: TestAtrium): Promise<string[]> {
  return (await readdir(join(atrium.root, "_instance", "credentials"))).filter((name) =>
    name.startsWith("cred_"),
  );
}

async function archived(atrium: TestAtrium): Promise<string[]> {
  return (await readdir(join(atrium.root, "_archive"))).sort();
}

describe("storage.archiveRetentionDays", { timeout: 120_000 }, () => {
  it("removes an archived workspace past the retention with its connections' credentials, and nothing else", async ({
    onTestFinished,
  }) => {
    const remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
    onTestFinished(() => remote.stop());
    const time = new FakeTime();
    const { log, lines } = capturingLogger();
    const atrium = await startConnectionsAtrium(
      "atrium-archive-retention-",
      time,
      log,
      {},
      {
        storage: { root: "./data", archiveRetentionDays: 30 },
      },
    );
    onTestFinished(async () => {
      await atrium.close();
      await rm(atrium.dir, { recursive: true, force: true });
    });
    const workspaceWithConnection = (name: string) =>
      workspaceWithConnectionAndTask(atrium, remote.url.href, SECRET, name);
    const schedulesOf = async (ws: string) =>
      (await readdir(join(atrium.root, "_instance", "tasks", "schedules"))).filter((name) =>
        name.startsWith(ws),
      );
    const gone = await workspaceWithConnection("gone");
    const [goneCredential] = await credentialFiles(atrium);
    const kept = await workspaceWithConnection("kept");
    expect(await credentialFiles(atrium)).toHaveLength(2);

    expect((await atrium.rest("alice", "DELETE", `/v1/workspaces/${gone}`)).status).toBe(204);
    time.jump(10 * DAY_MS);
    const later = await workspaceWithConnection("later");
    expect((await atrium.rest("alice", "DELETE", `/v1/workspaces/${later}`)).status).toBe(204);
    const goneArchive = (await archived(atrium)).find((name) => name.startsWith(`${gone}-`));
    const laterArchive = (await archived(atrium)).find((name) => name.startsWith(`${later}-`));
    expect(goneArchive).toBeDefined();
    expect(laterArchive).toBeDefined();
    expect(await credentialFiles(atrium)).toHaveLength(3);
    expect(await schedulesOf(gone)).toHaveLength(1);

    // Past 30 days for the first archive only: the next housekeeping round removes it, after its
    // credential (the folder goes last, so once it is gone the credential is too).
    time.jump(20 * DAY_MS);
    await time.advance(61 * 60 * 1000);
    await expect.poll(() => archived(atrium), { timeout: 10_000 }).toEqual([laterArchive]);
    expect(await schedulesOf(gone)).toEqual([]);
    expect(await schedulesOf(kept)).toHaveLength(1);
    const left = await credentialFiles(atrium);
    expect(left).toHaveLength(2);
    expect(left).not.toContain(goneCredential);
    const removed = () =>
      lines.filter((line) => line.msg === "archived workspace removed: past storage.archiveRetentionDays");
    await expect.poll(removed).toEqual([expect.objectContaining({ workspace: gone })]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);

    // The workspaces that were never archived still call their server with their credential.
    const refreshed = await atrium.rest(
      "alice",
      "POST",
      `/v1/workspaces/${kept}/connections/gh/tools/refresh`,
    );
    expect(refreshed.status).toBe(200);
  });

  it("stops a round under way once another process has taken the root over, past the archive it is removing", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const { log, lines } = capturingLogger();
    let lockPath = "";
    // Another process takes the root over while the first archive's release runs, as if this one
    // had been frozen past the stale bound there.
    const { app: frozenOnce, released } = takenOverAtFirstRelease(() => lockPath);
    const atrium = await startTestAtrium({
      clock: time.clock,
      timers: time.timers,
      log,
      apps: [...PLATFORM_APPS, frozenOnce],
      sections: { storage: { root: "./data", archiveRetentionDays: 30 } },
    });
    onTestFinished(async () => {
      await atrium.close();
      await rm(atrium.dir, { recursive: true, force: true });
    });
    lockPath = join(atrium.root, "_instance", "instance.lock");
    for (const name of ["first", "second", "third"]) {
      const created = await atrium.rest("alice", "POST", "/v1/workspaces", { name });
      const ws = ((await created.json()) as { id: string }).id;
      expect((await atrium.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
      time.jump(1000);
    }
    // Oldest first, as the purge takes them (by the instant in the name).
    const byAge = (await archived(atrium)).sort((a, b) => Number(a.split("-")[1]) - Number(b.split("-")[1]));
    const rest = byAge.slice(1);

    time.jump(31 * DAY_MS);
    await time.advance(61 * 60 * 1000);
    const stopped = () =>
      lines.filter((line) => String(line.msg).startsWith("archived workspaces' removal stopped"));
    await expect.poll(() => stopped().length).toBeGreaterThan(0);
    expect(stopped()[0]).toMatchObject({ notReached: rest });
    // The archive whose removal had begun is finished; none after it is released or touched.
    expect(released).toHaveLength(1);
    expect((await archived(atrium)).sort()).toEqual([...rest].sort());
  });
});
