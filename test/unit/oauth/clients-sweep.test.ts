import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ClientMetadataDocuments } from "../../../src/oauth/client-metadata.ts";
import { ClientRegistry, UNUSED_CLIENT_KEPT_MS } from "../../../src/oauth/clients.ts";
import { UnusedClientCap } from "../../../src/oauth/unused-client-cap.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { capturingLogger } from "../../helpers/atrium.ts";
import { gate } from "../../helpers/gate.ts";
import { type TestClock, tempInstance, testClock } from "./fixtures.ts";

// ADR 0137: a registered client that holds no live grant and has not been used (registered, a
// consent given for it, a refresh token it redeemed; ADR 0156's amendment: never a mere
// lookup) for 30 days is deleted by housekeeping; its id is then unknown.

const DAY_MS = 24 * 60 * 60 * 1000;
const CALLER = "127.0.0.1";
const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };
const noGrants = () => false;

let root: string;
let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;
let clients: ClientRegistry;
let lines: Array<Record<string, unknown>>;

beforeEach(async () => {
  ({ root, layout, cleanup } = await tempInstance());
  clock = testClock();
  const captured = capturingLogger();
  lines = captured.lines;
  clients = new ClientRegistry(
    layout,
    new ClientMetadataDocuments({ allowPrivate: false }),
    captured.log,
    clock,
    new UnusedClientCap(Number.MAX_SAFE_INTEGER, noGrants),
  );
});

afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

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
    expect(await clients.recordUse(id)).toBe(true);
    clock.advance(29 * DAY_MS);
    expect(await clients.sweep(noGrants)).toEqual([]);
    clock.advance(DAY_MS);
    expect(await clients.sweep(noGrants)).toEqual([id]);
  });

  it("a lookup is not a use: a client only ever named is swept 30 days after it registered", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const registered = await readFile(fileOf(id), "utf8");
    clock.advance(UNUSED_CLIENT_KEPT_MS - 1);
    // Anyone can name any id (the token endpoint before the secret, a signed-out authorize), so
    // naming one kept it, and a stranger kept a flood's clients for ever (ADR 0156's amendment).
    expect(await clients.find(id, CALLER)).toMatchObject({ client_id: id });
    expect(await readFile(fileOf(id), "utf8")).toBe(registered);
    clock.advance(1);
    expect(await clients.sweep(noGrants)).toEqual([id]);
  });

  it("a use is written at most once a day", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const stored = () => readFile(fileOf(id), "utf8");
    const registered = await stored();
    clock.advance(DAY_MS - 1);
    await clients.recordUse(id);
    expect(await stored()).toBe(registered);
    clock.advance(1);
    await clients.recordUse(id);
    expect(JSON.parse(await stored()).lastUsedAt).toBe(clock());
  });

  it("a use after the clock stepped back behind the last one is written, so its 30 days run from a time the clock has seen", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    // The clock ran ten days ahead at registration and is then set right (ADR 0168).
    clock.advance(-10 * DAY_MS);
    await clients.recordUse(id);
    expect(JSON.parse(await readFile(fileOf(id), "utf8")).lastUsedAt).toBe(clock());
    clock.advance(UNUSED_CLIENT_KEPT_MS - 1);
    expect(await clients.sweep(noGrants)).toEqual([]);
    clock.advance(1);
    expect(await clients.sweep(noGrants)).toEqual([id]);
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

  it("a sweep racing a use that is recorded first keeps the client", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    clock.advance(UNUSED_CLIENT_KEPT_MS + DAY_MS);
    // Held at the write of the use: a sweep that judged the record read before it deleted a
    // client whose consent was about to issue it a code.
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
      const using = clients.recordUse(id);
      await reached.promise;
      const sweeping = clients.sweep(noGrants);
      held.open();
      expect(await using).toBe(true);
      expect(await sweeping).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    expect(await clients.find(id, CALLER)).toMatchObject({ client_id: id });
  });

  it("a use racing a sweep that deletes first finds no client, and writes none back", async () => {
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
      const using = clients.recordUse(id);
      held.open();
      expect(await sweeping).toEqual([id]);
      expect(await using).toBe(false);
    } finally {
      spy.mockRestore();
    }
    expect(await exists(fileOf(id))).toBe(false);
  });
});

describe("a client record the sweep cannot use", () => {
  const UNREADABLE = "atc_00000000000000000000000000000000";

  it.each([
    ["null", "null\n"],
    ["a number", "42\n"],
    ["an array", '["a secret"]\n'],
    ["an object without its client", '{ "clientSecretHash": "a secret" }\n'],
    // A lookup threw at it (500 at /oauth/authorize and /oauth/token), where the rest answer unknown.
    ["not JSON", '{ "client": { "client_name": "a secret"\n'],
  ])(
    "a record that is %s is left for an operator, logged once, and every other client is still swept",
    async (_kind, text) => {
      const idle = [];
      for (let i = 0; i < 5; i++) idle.push((await clients.register(NATIVE)).client_id);
      await writeFile(fileOf(UNREADABLE), text);
      clock.advance(UNUSED_CLIENT_KEPT_MS);
      // Before, the sweep threw a TypeError at this record, every hour, and every client listed
      // after it was never swept.
      expect((await clients.sweep(noGrants)).sort()).toEqual(idle.sort());
      expect(await clients.sweep(noGrants)).toEqual([]);
      expect(await readFile(fileOf(UNREADABLE), "utf8")).toBe(text);
      // Answered as unknown (invalid_client), as before clients were swept, not a TypeError (500).
      expect(await clients.find(UNREADABLE, CALLER)).toBeUndefined();
      expect(await clients.storedName(UNREADABLE)).toBeUndefined();
      const reported = lines.filter((line) => line.clientId === UNREADABLE);
      expect(reported).toEqual([
        expect.objectContaining({ level: 40, msg: expect.stringContaining("unreadable") }),
      ]);
      // Its id and what to do, nothing it holds.
      expect(Object.keys(reported[0] ?? {}).sort()).toEqual(["clientId", "level", "msg", "service", "time"]);
    },
  );

  it("a last use that is not a time is stamped now, as a record from before, never swept at once", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const stored = JSON.parse(await readFile(fileOf(id), "utf8"));
    await writeFile(fileOf(id), JSON.stringify({ ...stored, lastUsedAt: "2026-01-01" }));
    clock.advance(DAY_MS);
    // A string gave NaN, which no "less than 30 days" holds for: swept at the first sweep.
    expect(await clients.sweep(noGrants)).toEqual([]);
    expect(JSON.parse(await readFile(fileOf(id), "utf8")).lastUsedAt).toBe(clock());
    clock.advance(UNUSED_CLIENT_KEPT_MS);
    expect(await clients.sweep(noGrants)).toEqual([id]);
  });

  it("a use of a client whose last use is not a time is recorded", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const stored = JSON.parse(await readFile(fileOf(id), "utf8"));
    await writeFile(fileOf(id), JSON.stringify({ ...stored, lastUsedAt: "2026-01-01" }));
    // NaN is never a day old, so this was never written and the next sweep deleted the client.
    expect(await clients.recordUse(id)).toBe(true);
    expect(JSON.parse(await readFile(fileOf(id), "utf8")).lastUsedAt).toBe(clock());
  });

  it("one client that cannot be written or deleted is logged and skipped; the others are swept", async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await clients.register(NATIVE)).client_id);
    const [stuck, unstamped, ...rest] = ids as [string, string, ...string[]];
    const stored = JSON.parse(await readFile(fileOf(unstamped), "utf8"));
    await writeFile(fileOf(unstamped), JSON.stringify({ ...stored, lastUsedAt: undefined }));
    clock.advance(UNUSED_CLIENT_KEPT_MS);
    // A full disk or a file it may not touch, injected: both of the sweep's own writes fail.
    const remove = JsonRecords.prototype.delete;
    vi.spyOn(JsonRecords.prototype, "delete").mockImplementation(async function (
      this: JsonRecords<unknown>,
      key: string,
    ) {
      if (key === stuck) throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      return remove.call(this, key);
    });
    vi.spyOn(JsonRecords.prototype, "put").mockRejectedValue(
      Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" }),
    );
    expect((await clients.sweep(noGrants)).sort()).toEqual(rest.sort());
    vi.restoreAllMocks();
    expect(
      lines
        .filter((line) => line.clientId !== undefined)
        .map((line) => line.clientId)
        .sort(),
    ).toEqual([stuck, unstamped].sort());
    expect(await exists(fileOf(stuck))).toBe(true);
    expect(await clients.sweep(noGrants)).toEqual([stuck]);
  });
});

describe("recording a client's use", () => {
  it("a use that cannot be written still finds the client, and the next use writes it", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    const registered = await readFile(fileOf(id), "utf8");
    clock.advance(DAY_MS);
    const spy = vi
      .spyOn(JsonRecords.prototype, "put")
      .mockRejectedValueOnce(
        Object.assign(new Error(`EROFS: read-only file system, open '${root}'`), { code: "EROFS" }),
      );
    // Before, the lookup threw: /oauth/token answered 500 and /oauth/authorize showed the error.
    expect(await clients.recordUse(id)).toBe(true);
    expect(await readFile(fileOf(id), "utf8")).toBe(registered);
    expect(lines).toEqual([expect.objectContaining({ clientId: id, level: 40 })]);
    expect(await clients.recordUse(id)).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
    expect(JSON.parse(await readFile(fileOf(id), "utf8")).lastUsedAt).toBe(clock());
  });

  it("a client whose use could not be written is not swept while the request uses it", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    clock.advance(UNUSED_CLIENT_KEPT_MS + DAY_MS);
    vi.spyOn(JsonRecords.prototype, "put").mockRejectedValueOnce(
      Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" }),
    );
    // A consent about to issue a code for it, which the sweep cannot see yet.
    expect(await clients.recordUse(id)).toBe(true);
    // Before, the stale stamp on disk had the sweep delete it, and the grant was for no client.
    expect(await clients.sweep(noGrants)).toEqual([]);
    expect(await exists(fileOf(id))).toBe(true);
    // The use kept in memory moves the 30 days as a written one does, no further.
    clock.advance(UNUSED_CLIENT_KEPT_MS);
    expect(await clients.sweep(noGrants)).toEqual([id]);
    expect(await clients.find(id, CALLER)).toBeUndefined();
  });

  it("a use of a client used today does not wait for the client's key", async () => {
    const { client_id: id } = await clients.register(NATIVE);
    // A sweep holds the client's key, stopped at its read of the record. Before, every lookup
    // (then the use) took that key too, so this one waited for the sweep (the test hung): a
    // client's refreshes queued behind one another.
    const reached = gate();
    const held = gate();
    const read = JsonRecords.prototype.get;
    let first = true;
    vi.spyOn(JsonRecords.prototype, "get").mockImplementation(async function (
      this: JsonRecords<unknown>,
      key: string,
    ) {
      if (first) {
        first = false;
        reached.open();
        await held.promise;
      }
      return read.call(this, key);
    });
    const sweeping = clients.sweep(noGrants);
    await reached.promise;
    expect(await clients.recordUse(id)).toBe(true);
    held.open();
    expect(await sweeping).toEqual([]);
  });
});

describe("the stop's writes of uses kept in memory", () => {
  it("start none once the stop aborts them: the uses left are not written", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await clients.register(NATIVE)).client_id);
    const registered = await Promise.all(ids.map((id) => readFile(fileOf(id), "utf8")));
    clock.advance(DAY_MS);
    // Both uses fail to be written, so only memory holds them.
    const put = JsonRecords.prototype.put;
    const full = () => Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    const puts = vi
      .spyOn(JsonRecords.prototype, "put")
      .mockRejectedValueOnce(full())
      .mockRejectedValueOnce(full());
    for (const id of ids) await clients.recordUse(id);
    // The stop's bound passes while the first is written: the lock goes, and the second must not follow.
    const stop = new AbortController();
    puts.mockImplementation(async function (this: JsonRecords<unknown>, key: string, record: unknown) {
      await put.call(this, key, record);
      stop.abort();
    });
    await clients.writeRememberedUses(stop.signal, async () => true);
    const [first, second] = ids as [string, string];
    expect(JSON.parse(await readFile(fileOf(first), "utf8")).lastUsedAt).toBe(clock());
    expect(await readFile(fileOf(second), "utf8")).toBe(registered[1]);
  });
});
