import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { DamagedConnections, viewConnection } from "../../../../src/platform/connections/connection-view.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { gate } from "../../../helpers/gate.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A listing of a workspace's connections reads each one after it has listed their names: one
// removed in between is not there to read, and is no reason to fail the listing of the others.
// One still there whose file is lost is not removed: it is left out as damaged, and said so.

const ADMIN = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let store: ConnectionStore;
const damaged = new DamagedConnections(createLogger("silent"));

beforeEach(async () => {
  temp = await openTempRoot("connection-view", ADMIN);
  store = new ConnectionStore(temp.layout.partition("connections"));
  const snapshot = {
    version: 1,
    takenAt: "2026-12-07T00:00:00.000Z",
    generation: 1,
    protocolVersion: "2026-07-28",
    tools: [],
    digests: {},
    digest: "d1",
  };
  await store.create(
    connectionRecord(temp.ws, { id: `con_${"1".repeat(24)}`, name: "alpha" }),
    snapshot,
    NO_CALLER,
  );
  await store.create(
    connectionRecord(temp.ws, { id: `con_${"2".repeat(24)}`, name: "beta" }),
    snapshot,
    NO_CALLER,
  );
});

afterEach(async () => {
  vi.restoreAllMocks();
  await temp.remove();
});

/** The next record read is held, once read, until `release` opens; `read` opens as it waits. */
function holdRecordRead() {
  const [read, release] = [gate(), gate()];
  const original = store.get.bind(store);
  vi.spyOn(store, "get").mockImplementationOnce(async (workspaceId, name) => {
    const record = await original(workspaceId, name);
    read.open();
    await release.promise;
    return record;
  });
  return { read: read.promise, release: release.open };
}

describe("a listing of connections while one is removed", () => {
  it("leaves the removed one out, as Connections.list reads them", async () => {
    // alpha's record is read, then alpha is removed before its snapshot is.
    const held = holdRecordRead();
    const listing = damaged.readEach(store, temp.ws, store.names(temp.ws), (name) =>
      viewConnection(store, temp.ws, name, []),
    );
    await held.read;
    await store.remove(temp.ws, "alpha", () => undefined, NO_CALLER);
    held.release();
    expect((await listing).map((view) => view.name)).toEqual(["beta"]);
  });

  it("leaves out one whose snapshot was removed as it was read, as published skills read them", async () => {
    const held = holdRecordRead();
    const listing = damaged.readEach(store, temp.ws, store.names(temp.ws), async (name) => {
      await store.snapshot(temp.ws, name, 1);
      return name;
    });
    await held.read;
    await store.remove(temp.ws, "alpha", () => undefined, NO_CALLER);
    held.release();
    expect(await listing).toEqual(["beta"]);
  });

  it("still fails for any other error", async () => {
    const failing = damaged.readEach(store, temp.ws, ["alpha", "beta"], async () => {
      throw new Error("disk on fire");
    });
    await expect(failing).rejects.toThrow("disk on fire");
  });
});

describe("a listing of connections where one still there has lost a file", () => {
  const fileOf = (name: string, ...file: string[]) =>
    join(temp.layout.partition("connections").dir(temp.ws), "servers", name, ...file);

  /**
   * Removes alpha's `file` as a hand or a partial restore does while Atrium is down: the store then
   * holds no record it read or wrote (a create keeps what it wrote) and reads each from disk.
   */
  async function loseAtRestart(...file: string[]): Promise<void> {
    await rm(fileOf("alpha", ...file));
    store = new ConnectionStore(temp.layout.partition("connections"));
    await store.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(Date.now()));
  }

  it.for([
    ["its current snapshot", ["snapshots", "1.json"], "snapshot_not_found"],
    ["its record", ["connection.json"], "connection_not_found"],
  ] as const)("leaves it out logged once when %s is missing", async ([, file, code]) => {
    const { log, lines } = memoryLog();
    const logged = new DamagedConnections(log);
    await loseAtRestart(...file);
    const list = () =>
      logged.readEach(store, temp.ws, store.names(temp.ws), (name) =>
        viewConnection(store, temp.ws, name, []),
      );
    expect((await list()).map((view) => view.name)).toEqual(["beta"]);
    expect((await list()).map((view) => view.name)).toEqual(["beta"]);
    const said = lines.filter((line) => line.connection === "alpha");
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 50, key: temp.ws, code });
    expect(String(said[0]?.msg)).toContain("missing while the connection is still there");
    expect(store.names(temp.ws)).toContain("alpha");
  });
  it("is removed all the same when its record is missing: the name is free again", async () => {
    await loseAtRestart("connection.json");
    const rethrow = (error: unknown): undefined => {
      throw error;
    };
    await expect(store.remove(temp.ws, "alpha", rethrow, NO_CALLER)).resolves.toBeUndefined();
    expect(store.names(temp.ws)).toEqual(["beta"]);
  });
});
