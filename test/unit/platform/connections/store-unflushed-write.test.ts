import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import type { Snapshot } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { WrittenNotFlushed } from "../../../../src/storage/atomic.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The record's write (connection.json renamed into place, then its folder flushed) can land and
// still throw. The store kept the record it replaced: a disable that landed was served enabled
// until a restart read it, and the next update, taking the kept record as its base, wrote
// `disabled: false` back. An overwrite that lands is held as landed and answered as done (ADR 0166).

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let store: ConnectionStore;

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

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

function serverDir(name = "srv"): string {
  return join(temp.layout.partition("connections").dir(temp.ws), "servers", name);
}

async function onDisk(): Promise<ConnectionRecord> {
  return JSON.parse(await readFile(join(serverDir(), "connection.json"), "utf8")) as ConnectionRecord;
}

async function restarted(): Promise<ConnectionStore> {
  const fresh = new ConnectionStore(temp.layout.partition("connections"));
  await fresh.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(Date.now()));
  return fresh;
}

/** Runs `work` while every flush of the folder `failing` fails. */
function flushFailing<T>(failing: (path: string) => boolean, work: () => Promise<T>): Promise<T> {
  let result!: T;
  return journalDuring(
    async () => {
      result = await work();
    },
    { sync: (path) => (failing(path) ? eio() : undefined) },
  ).then(() => result);
}

beforeEach(async () => {
  temp = await openTempRoot("store-unflushed-write", ALICE);
  store = new ConnectionStore(temp.layout.partition("connections"));
  await store.create(connectionRecord(temp.ws, { createdBy: ALICE }), snapshot(1), NO_CALLER);
});

afterEach(async () => {
  await temp.remove();
});

it("a disable whose record lands but whose folder's flush fails is done: served disabled, as after a restart", async () => {
  const told: ConnectionRecord[] = [];
  const answered = await flushFailing(
    (path) => path === serverDir(),
    () =>
      store.update(
        temp.ws,
        "srv",
        (r) => ({ ...r, disabled: true }),
        (next) => told.push(next),
        NO_CALLER,
      ),
  );
  expect(answered.disabled).toBe(true);
  expect(told.map((r) => r.disabled)).toEqual([true]);
  expect((await store.get(temp.ws, "srv")).disabled).toBe(true);
  expect((await (await restarted()).get(temp.ws, "srv")).disabled).toBe(true);

  await store.update(
    temp.ws,
    "srv",
    (r) => ({ ...r, authorizationGeneration: r.authorizationGeneration + 1 }),
    undefined,
    NO_CALLER,
  );
  expect(await onDisk()).toMatchObject({ disabled: true, authorizationGeneration: 2 });
});

it("a snapshot whose record lands but whose folder's flush fails is current, and never rewritten", async () => {
  const appended = await flushFailing(
    (path) => path === serverDir(),
    () => store.appendSnapshot(temp.ws, "srv", snapshot(2, "first")),
  );
  expect(appended.snapshotVersion).toBe(2);
  expect((await store.get(temp.ws, "srv")).snapshotVersion).toBe(2);
  await expect(store.appendSnapshot(temp.ws, "srv", snapshot(2, "second"))).rejects.toMatchObject({
    code: "snapshot_raced",
  });
  expect((await store.snapshot(temp.ws, "srv", 2)).digest).toBe("first");
});

it("an update whose new file's own flush fails changes nothing, in memory or on disk", async () => {
  await expect(
    flushFailing(
      (path) => path.startsWith(join(serverDir(), ".tmp-")),
      () => store.update(temp.ws, "srv", (r) => ({ ...r, disabled: true }), undefined, NO_CALLER),
    ),
  ).rejects.toThrow("EIO");
  expect((await onDisk()).disabled).toBe(false);
  expect((await store.get(temp.ws, "srv")).disabled).toBe(false);
});

it("a create whose staged record's flush fails is refused with the flush's error and leaves nothing", async () => {
  const other = connectionRecord(temp.ws, { createdBy: ALICE, id: `con_${"e".repeat(24)}`, name: "other" });
  const refused = await flushFailing(
    (path) => /\/servers\/\.tmp-other-[0-9a-f]+$/.test(path), // the staging folder itself
    () => store.create(other, snapshot(1), NO_CALLER),
  ).catch((error: unknown) => error);
  expect(refused).toMatchObject({ code: "EIO" });
  expect(refused).not.toBeInstanceOf(WrittenNotFlushed);
  expect(store.names(temp.ws)).toEqual(["srv"]);
  expect((await restarted()).names(temp.ws)).toEqual(["srv"]);
});
