import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ClientMetadataDocuments } from "../../../src/oauth/client-metadata.ts";
import { ClientRegistry, UNUSED_CLIENT_KEPT_MS } from "../../../src/oauth/clients.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { gate } from "../../helpers/gate.ts";
import { type TestClock, tempInstance, testClock } from "./fixtures.ts";

// ADR 0137: a registered client that holds no live grant and has not been used (registered,
// named by an authorization request or at the token or revocation endpoint) for 30 days is
// deleted by housekeeping; its id is then unknown.

const DAY_MS = 24 * 60 * 60 * 1000;
const CALLER = "127.0.0.1";
const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };
const noGrants = () => false;

let root: string;
let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;
let clients: ClientRegistry;

beforeEach(async () => {
  ({ root, layout, cleanup } = await tempInstance());
  clock = testClock();
  clients = new ClientRegistry(layout, new ClientMetadataDocuments({ allowPrivate: false }), clock);
});

afterEach(() => cleanup());

function fileOf(clientId: string): string {
  return join(root, "_instance", "oauth", "clients", `${clientId}.json`);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe("sweeping registered clients", () => {
  it("a client never used after it registered is kept 30 days, then swept, and its id is unknown", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    expect(UNUSED_CLIENT_KEPT_MS).toBe(30 * DAY_MS);
    clock.advance(UNUSED_CLIENT_KEPT_MS - 1);
    expect(await clients.sweep(noGrants)).toEqual([]);
    clock.advance(1);
    expect(await clients.sweep(noGrants)).toEqual([id]);
    expect(await clients.find(id, CALLER)).toBeUndefined();
    expect(await exists(fileOf(id))).toBe(false);
  });

  it("each use starts the 30 days again", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    clock.advance(20 * DAY_MS);
    expect(await clients.find(id, CALLER)).toBeDefined();
    clock.advance(29 * DAY_MS);
    expect(await clients.sweep(noGrants)).toEqual([]);
    clock.advance(DAY_MS);
    expect(await clients.sweep(noGrants)).toEqual([id]);
  });

  it("a use is written at most once a day", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const stored = () => readFile(fileOf(id), "utf8");
    const registered = await stored();
    clock.advance(DAY_MS - 1);
    await clients.find(id, CALLER);
    expect(await stored()).toBe(registered);
    clock.advance(1);
    await clients.find(id, CALLER);
    expect(JSON.parse(await stored()).lastUsedAt).toBe(clock());
  });

  it("a client holding a live grant is never swept, however long unused", async () => {
    const { client_id: held } = await clients.register(NATIVE);
    const { client_id: idle } = await clients.register(NATIVE);
    clock.advance(365 * DAY_MS);
    expect(await clients.sweep((clientId) => clientId === held)).toEqual([idle]);
    expect(await clients.find(held, CALLER)).toMatchObject({ client_id: held });
  });

  it("a client stored before clients were swept is kept: the first sweep that meets it starts its 30 days", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const { lastUsedAt: _dropped, ...before } = JSON.parse(await readFile(fileOf(id), "utf8"));
    await writeFile(fileOf(id), JSON.stringify(before));
    clock.advance(400 * DAY_MS);
    expect(await clients.sweep(noGrants)).toEqual([]);
    clock.advance(UNUSED_CLIENT_KEPT_MS);
    expect(await clients.sweep(noGrants)).toEqual([id]);
  });

  it("a sweep racing a lookup that records its use first keeps the client", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    clock.advance(UNUSED_CLIENT_KEPT_MS + DAY_MS);
    // Held at the lookup's write of its use: a sweep that judged the record read before it
    // deleted a client an authorization request or a code exchange was using.
    const reached = gate();
    const held = gate();
    const write = JsonRecords.prototype.put;
    const spy = vi.spyOn(JsonRecords.prototype, "put").mockImplementation(async function (
      this: JsonRecords<unknown>,
      key: string,
      record: unknown,
    ) {
      reached.open();
      await held.promise;
      return write.call(this, key, record);
    });
    try {
      const finding = clients.find(id, CALLER);
      await reached.promise;
      const sweeping = clients.sweep(noGrants);
      held.open();
      expect(await finding).toMatchObject({ client_id: id });
      expect(await sweeping).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    expect(await clients.find(id, CALLER)).toMatchObject({ client_id: id });
  });

  it("a lookup racing a sweep that deletes first finds no client, and writes none back", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    clock.advance(UNUSED_CLIENT_KEPT_MS + DAY_MS);
    const reached = gate();
    const held = gate();
    const remove = JsonRecords.prototype.delete;
    const spy = vi.spyOn(JsonRecords.prototype, "delete").mockImplementation(async function (
      this: JsonRecords<unknown>,
      key: string,
    ) {
      reached.open();
      await held.promise;
      return remove.call(this, key);
    });
    try {
      const sweeping = clients.sweep(noGrants);
      await reached.promise;
      const finding = clients.find(id, CALLER);
      held.open();
      expect(await sweeping).toEqual([id]);
      expect(await finding).toBeUndefined();
    } finally {
      spy.mockRestore();
    }
    expect(await exists(fileOf(id))).toBe(false);
  });
});
