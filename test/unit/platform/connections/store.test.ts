import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import type { Snapshot } from "../../../../src/platform/connections/snapshot.ts";
import { KEPT_SNAPSHOTS } from "../../../../src/platform/connections/snapshot-files.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;

let temp: TempRoot;

function record(snapshotVersion: number): ConnectionRecord {
  return connectionRecord(temp.ws, { createdBy: ALICE, snapshotVersion });
}

function snapshot(version: number, digest = `d${version}`): Snapshot {
  return {
    version,
    takenAt: "2026-12-06T00:00:00.000Z",
    generation: 1,
    protocolVersion: "2025-11-25",
    tools: [],
    digests: {},
    digest,
  };
}

function snapshotsDir(): string {
  return join(temp.layout.partition("connections").dir(temp.ws), "servers", "srv", "snapshots");
}

/** What an append killed between writing its snapshot file and committing the record leaves. */
async function leaveUncommitted(version: number): Promise<void> {
  await writeFile(join(snapshotsDir(), `${version}.json`), JSON.stringify(snapshot(version, "left")));
}

beforeEach(async () => {
  temp = await openTempRoot("connection-store", ALICE);
});

afterEach(async () => {
  await temp.remove();
});

describe("ConnectionStore snapshots", () => {
  it("never lists or reads a snapshot file the record has not committed", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    await leaveUncommitted(2);

    const restarted = new ConnectionStore(temp.layout.partition("connections"));
    await restarted.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(Date.now()));
    expect((await restarted.snapshots(temp.ws, "srv")).map((s) => s.version)).toEqual([1]);
    await expect(restarted.snapshot(temp.ws, "srv", 2)).rejects.toMatchObject({ code: "snapshot_not_found" });
  });

  it("replaces an uncommitted leftover: the next refresh commits instead of racing forever", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    await leaveUncommitted(2);

    const next = await store.appendSnapshot(temp.ws, "srv", snapshot(2, "fresh"));
    expect(next.snapshotVersion).toBe(2);
    expect((await store.snapshot(temp.ws, "srv", 2)).digest).toBe("fresh");
    expect((await store.snapshots(temp.ws, "srv")).map((s) => s.version)).toEqual([2, 1]);
    expect((await readdir(snapshotsDir())).sort()).toEqual(["1.json", "2.json"]);
  });

  it("keeps the newest KEPT_SNAPSHOTS versions: an append past them removes the oldest, which are no longer read", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    const last = KEPT_SNAPSHOTS + 3;
    for (let version = 2; version <= last; version++)
      await store.appendSnapshot(temp.ws, "srv", snapshot(version));
    const kept = Array.from({ length: KEPT_SNAPSHOTS }, (_, i) => last - i);
    expect((await store.snapshots(temp.ws, "srv")).map((s) => s.version)).toEqual(kept);
    expect((await readdir(snapshotsDir())).length).toBe(KEPT_SNAPSHOTS);
    await expect(store.snapshot(temp.ws, "srv", 3)).rejects.toMatchObject({ code: "snapshot_not_found" });
    expect((await store.snapshot(temp.ws, "srv", 4)).digest).toBe("d4");
  });

  it("writes a snapshot compact, and reads one an earlier version wrote indented", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    await store.appendSnapshot(temp.ws, "srv", snapshot(2));
    for (const version of [1, 2])
      expect(await readFile(join(snapshotsDir(), `${version}.json`), "utf8")).toBe(
        `${JSON.stringify(snapshot(version))}\n`,
      );
    await writeFile(join(snapshotsDir(), "1.json"), `${JSON.stringify(snapshot(1, "indented"), null, 2)}\n`);
    expect((await store.snapshot(temp.ws, "srv", 1)).digest).toBe("indented");
    expect((await store.snapshots(temp.ws, "srv")).map((s) => s.digest)).toEqual(["d2", "indented"]);
  });

  it("still refuses a version that is not the next one", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    await expect(store.appendSnapshot(temp.ws, "srv", snapshot(3))).rejects.toMatchObject({
      code: "snapshot_raced",
    });
    await expect(store.appendSnapshot(temp.ws, "srv", snapshot(1))).rejects.toMatchObject({
      code: "snapshot_raced",
    });
    expect((await store.snapshot(temp.ws, "srv", 1)).digest).toBe("d1");
  });

  it("appends nothing for a refresh a disable ended while the append waited behind the disable's write", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    const refresh = new AbortController();
    const disabling = store.update(
      temp.ws,
      "srv",
      (current) => ({ ...current, disabled: true }),
      undefined,
      NO_CALLER,
    );
    const appending = store.appendSnapshot(temp.ws, "srv", snapshot(2), refresh.signal);
    const ended = new Error("disabled meanwhile");
    refresh.abort(ended);
    await disabling;
    await expect(appending).rejects.toBe(ended);
    expect((await store.get(temp.ws, "srv")).snapshotVersion).toBe(1);
    expect((await readdir(snapshotsDir())).sort()).toEqual(["1.json"]);
  });
});

describe("ConnectionStore recovery", () => {
  it("removes the temp files an atomic write left inside a connection's folder and its snapshots", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    await store.create(record(1), snapshot(1), NO_CALLER);
    const folder = join(temp.layout.partition("connections").dir(temp.ws), "servers", "srv");
    const leftovers = [
      join(folder, ".tmp-credential.json-1"),
      join(folder, ".tmp-transport.json-2"),
      join(snapshotsDir(), ".tmp-2.json-3"),
    ];
    for (const path of leftovers) await writeFile(path, "{");
    const names = async () => [...(await readdir(folder)), ...(await readdir(snapshotsDir()))].sort();

    // Housekeeping leaves a young one: it may be a write in progress.
    await store.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.housekeeping(Date.now()));
    expect((await names()).filter((name) => name.startsWith(".tmp-"))).toHaveLength(3);

    const restarted = new ConnectionStore(temp.layout.partition("connections"));
    await restarted.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(Date.now()));
    expect(await names()).toEqual([
      "1.json",
      "connection.json",
      "credential.json",
      "snapshots",
      "transport.json",
    ]);
    expect(restarted.names(temp.ws)).toEqual(["srv"]);
  });
});

describe("ConnectionStore health files", () => {
  it("a loop's conclusion that lands while its connection is removed writes nothing and does not fail", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    for (let round = 0; round < 5; round++) {
      await store.create(record(1), snapshot(1), NO_CALLER);
      const removed = store.remove(temp.ws, "srv", () => undefined, NO_CALLER);
      await Promise.all([
        store.writeCredential(temp.ws, "srv", { lapsed: true }),
        store.writeTransport(temp.ws, "srv", { up: false, failures: 1 }),
        removed,
      ]);
      expect(store.names(temp.ws)).toEqual([]);
      expect(await readdir(join(temp.layout.partition("connections").dir(temp.ws), "servers"))).toEqual([]);
    }
  });
});

describe("ConnectionStore remove", () => {
  it("queued behind a create of the same name, before the create indexed it, answers 404 and leaves it whole", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    const old = connectionRecord(temp.ws, { id: `con_${"o".repeat(24)}` });
    await store.create(old, snapshot(1), NO_CALLER);
    // The first remove's turn at the connection's lock is held until a create and a second
    // remove have queued behind it (the lock is private: its run is wrapped for the test).
    const lock = (
      store as unknown as { lock: { run: (key: string, work: () => Promise<unknown>) => Promise<unknown> } }
    ).lock;
    const run = lock.run.bind(lock);
    let [calls, open, createQueued] = [0, () => {}, () => {}];
    const [held, queued] = [
      new Promise<void>((r) => (open = r)),
      new Promise<void>((r) => (createQueued = r)),
    ];
    lock.run = (key, work) => {
      calls += 1;
      if (calls === 1) return run(key, async () => held.then(work));
      if (calls === 2) createQueued();
      return run(key, work);
    };
    const rethrow = (error: unknown): undefined => {
      throw error;
    };
    const first = store.remove(temp.ws, "srv", rethrow, NO_CALLER);
    const fresh = connectionRecord(temp.ws, { id: `con_${"n".repeat(24)}` });
    const created = store.create(fresh, snapshot(1), NO_CALLER);
    await queued;
    // "srv" is still indexed when it is asked, so it queues behind the create.
    const second = store.remove(temp.ws, "srv", rethrow, NO_CALLER);
    open();
    await expect(first).resolves.toMatchObject({ id: old.id });
    await created;
    // It took the create's folder, not yet indexed, for a lost record's: removed it, answered none.
    await expect(second).rejects.toMatchObject({ code: "connection_not_found" });
    expect(store.names(temp.ws)).toEqual(["srv"]);
    expect((await store.get(temp.ws, "srv")).id).toBe(fresh.id);
  });
});

describe("ConnectionStore holds", () => {
  // What the OAuth tokens ask before they keep anything of a connection in memory
  // (oauth/connection-tokens.ts remembers): a removed connection's late refresh keeps nothing.
  it("answers whether a connection of that id is the one stored under its name: not once removed, nor for an earlier one of the name", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    const old = connectionRecord(temp.ws, { id: `con_${"o".repeat(24)}` });
    await store.create(old, snapshot(1), NO_CALLER);
    expect(store.holds(temp.ws, "srv", (await store.get(temp.ws, "srv")).id)).toBe(true);
    await store.remove(temp.ws, "srv", () => undefined, NO_CALLER);
    expect(store.holds(temp.ws, "srv", old.id)).toBe(false);
    const fresh = connectionRecord(temp.ws, { id: `con_${"n".repeat(24)}` });
    await store.create(fresh, snapshot(1), NO_CALLER);
    await store.get(temp.ws, "srv");
    expect(store.holds(temp.ws, "srv", old.id)).toBe(false);
    expect(store.holds(temp.ws, "srv", fresh.id)).toBe(true);
  });
});
