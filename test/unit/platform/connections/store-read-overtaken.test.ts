import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import type { Snapshot } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { holdingReadAnswer } from "../../../helpers/held-read.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// ConnectionStore.get reads a record it does not hold without the connection's lock (a tools/list,
// a skills listing after boot); update, appendSnapshot and remove write under it. A read that read
// connection.json before a write's rename and came back after it kept the record the write
// replaced: served from then on, and the base of the next locked write, which put it back on disk.
// A read a write overtook keeps nothing (ADR 0162).

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;

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

function serverFile(name: string): string {
  return join(temp.layout.partition("connections").dir(temp.ws), "servers", "srv", name);
}

async function onDisk(): Promise<ConnectionRecord> {
  return JSON.parse(await readFile(serverFile("connection.json"), "utf8")) as ConnectionRecord;
}

/** A store holding no record yet, as after a restart: its first read of "srv" is from disk. */
async function restarted(): Promise<ConnectionStore> {
  const store = new ConnectionStore(temp.layout.partition("connections"));
  await store.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(Date.now()));
  return store;
}

beforeEach(async () => {
  temp = await openTempRoot("store-read-overtaken", ALICE);
  await new ConnectionStore(temp.layout.partition("connections")).create(
    connectionRecord(temp.ws, { createdBy: ALICE }),
    snapshot(1),
    NO_CALLER,
  );
});

afterEach(async () => {
  await temp.remove();
});

it("a disable that lands while a read of the record is under way stays: served disabled, and kept by the next update", async () => {
  const store = await restarted();
  await holdingReadAnswer(serverFile("connection.json"), async (held) => {
    const listing = store.get(temp.ws, "srv");
    await held.reached;
    await store.update(temp.ws, "srv", (r) => ({ ...r, disabled: true }), undefined, NO_CALLER);
    held.release();
    expect((await listing).disabled).toBe(false); // read before the disable: answered as it stood then
  });

  expect((await onDisk()).disabled).toBe(true);
  expect((await store.get(temp.ws, "srv")).disabled).toBe(true);
  await store.update(
    temp.ws,
    "srv",
    (r) => ({ ...r, authorizationGeneration: r.authorizationGeneration + 1 }),
    undefined,
    NO_CALLER,
  );
  expect(await onDisk()).toMatchObject({ disabled: true, authorizationGeneration: 2 });
});

it("a snapshot committed while a read of the record is under way is never rewritten by the next refresh", async () => {
  const store = await restarted();
  await holdingReadAnswer(serverFile("connection.json"), async (held) => {
    const listing = store.get(temp.ws, "srv");
    await held.reached;
    await store.appendSnapshot(temp.ws, "srv", snapshot(2, "first"));
    held.release();
    await listing;
  });

  // A refresh that found the record at version 1 appends version 2 again: refused, as it raced.
  await expect(store.appendSnapshot(temp.ws, "srv", snapshot(2, "second"))).rejects.toMatchObject({
    code: "snapshot_raced",
  });
  expect(JSON.parse(await readFile(serverFile("snapshots/2.json"), "utf8"))).toMatchObject({
    digest: "first",
  });
  expect((await store.snapshot(temp.ws, "srv", 2)).digest).toBe("first");
});

it("a connection removed while a read of its record is under way is never served under its successor's name", async () => {
  const store = await restarted();
  await holdingReadAnswer(serverFile("connection.json"), async (held) => {
    const listing = store.get(temp.ws, "srv").catch(() => undefined);
    await held.reached;
    await store.remove(temp.ws, "srv", () => undefined, NO_CALLER);
    held.release();
    await listing;
  });

  const successor = connectionRecord(temp.ws, {
    createdBy: ALICE,
    id: `con_${"d".repeat(24)}`,
    url: "https://other.example.com/mcp",
  });
  await store.create(successor, snapshot(1), NO_CALLER);
  expect(await store.get(temp.ws, "srv")).toMatchObject({ id: successor.id, url: successor.url });
  expect(store.holds(temp.ws, "srv", successor.id)).toBe(true);
});
