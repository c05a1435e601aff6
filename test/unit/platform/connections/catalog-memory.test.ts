import { mkdir, readdir, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CATALOG_INDEX_IDLE_MS,
  Catalog,
  ENTRY_OVERHEAD_BYTES,
  INDEX_OVERHEAD_BYTES,
  MAX_WORKSPACE_ENTRIES,
} from "../../../../src/platform/connections/catalog.ts";
import {
  catalogIdOf,
  MAX_ENTRY_BYTES,
  type ServerJson,
} from "../../../../src/platform/connections/catalog-entry.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A workspace holds up to 100 entries of up to 64 KiB (`_meta` and `packages` take any object), and
// one person may administer 1,000 workspaces (ADR 0141). Kept for every workspace ever listed,
// archived ones included, listing them all held some 6 GiB for the process's life (adr/0038,
// amended): entries unused CATALOG_INDEX_IDLE_MS are let go, and an archive lets them go at once.

const ALICE = `usr_${"a".repeat(24)}`;
let temp: TempRoot;
let time: FakeTime;
let logged: ReturnType<typeof memoryLog>;

beforeEach(async () => {
  temp = await openTempRoot("catalog-memory", ALICE);
  time = new FakeTime();
  logged = memoryLog();
});
afterEach(async () => {
  await temp.remove();
});

function openCatalog(cacheBytes?: number): Catalog {
  return new Catalog({
    dir: undefined,
    storage: temp.layout.partition("connections"),
    clock: time.clock,
    log: logged.log,
    ...(cacheBytes !== undefined && { cacheBytes }),
  });
}

function server(i: number, pad = ""): ServerJson {
  return {
    name: `com.example/s${i}`,
    description: "A server",
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: `https://s${i}.example.com/mcp` }],
    ...(pad && { _meta: { "com.example/notes": pad } }),
  };
}

function catalogDir(workspaceId: string): string {
  return join(temp.layout.partition("connections").dir(workspaceId), "catalog");
}

/** What a workspace's entries weigh for the budget: their stored files, and what holding each adds. */
async function weight(workspaceId: string): Promise<number> {
  const dir = catalogDir(workspaceId);
  let bytes = INDEX_OVERHEAD_BYTES;
  for (const name of await readdir(dir)) bytes += (await stat(join(dir, name))).size + ENTRY_OVERHEAD_BYTES;
  return bytes;
}

const ids = (entries: { id: string }[]) => entries.map((e) => e.id).sort();

/** Writes a workspace's stored entries as a process before this one did. */
async function store(workspaceId: string, servers: readonly ServerJson[]): Promise<void> {
  const dir = join(temp.layout.partition("connections").dir(workspaceId), "catalog");
  await mkdir(dir, { recursive: true });
  for (const s of servers) {
    const file = `${s.name.replace("/", "~")}.json`;
    await writeFile(
      join(dir, file),
      JSON.stringify({ server: s, addedBy: ALICE, addedAt: "2026-12-07T00:00:00.000Z" }),
    );
  }
}

describe("a workspace's catalog entries in memory", () => {
  it("are let go once unused for CATALOG_INDEX_IDLE_MS, and read from the folder at the next use", async () => {
    const workspaces = [temp.ws];
    for (let i = 1; i < 4; i++) workspaces.push((await temp.workspaces.create(`W${i}`, ALICE)).id);
    const pad = "x".repeat(MAX_ENTRY_BYTES - 4096);
    const full = Array.from({ length: MAX_WORKSPACE_ENTRIES }, (_, i) => server(i, `${i}${pad}`));
    for (const ws of workspaces) await store(ws, full);
    const catalog = openCatalog();
    for (const ws of workspaces) expect(await catalog.list(ws)).toHaveLength(MAX_WORKSPACE_ENTRIES);
    expect(catalog.heldWorkspaces).toBe(4);

    await catalog.sweep(time.clock() + CATALOG_INDEX_IDLE_MS - 1);
    expect(catalog.heldWorkspaces).toBe(4);
    await catalog.sweep(time.clock() + CATALOG_INDEX_IDLE_MS);
    expect(catalog.heldWorkspaces).toBe(0);

    // Read again from the folder: what an operator put there meanwhile shows.
    await store(temp.ws, [server(MAX_WORKSPACE_ENTRIES + 1)]);
    expect(await catalog.list(temp.ws)).toHaveLength(MAX_WORKSPACE_ENTRIES + 1);
    expect(catalog.heldWorkspaces).toBe(1);
  });

  it("kept by a workspace's adds and removes while in use, so none is lost to an idle sweep", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server(1), NO_CALLER);
    await catalog.sweep(time.clock() + CATALOG_INDEX_IDLE_MS);
    expect(catalog.heldWorkspaces).toBe(0);
    await catalog.add(temp.ws, ALICE, server(2), NO_CALLER);
    await catalog.remove(temp.ws, "com.example~s1", NO_CALLER);
    expect((await catalog.list(temp.ws)).map((e) => e.id)).toEqual(["com.example~s2"]);
    expect((await openCatalog().list(temp.ws)).map((e) => e.id)).toEqual(["com.example~s2"]);
  });

  it("are let go by forget (the workspace was archived)", async () => {
    const other = (await temp.workspaces.create("Other", ALICE)).id;
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server(1), NO_CALLER);
    await catalog.list(other);
    expect(catalog.heldWorkspaces).toBe(2);
    catalog.forget(temp.ws);
    expect(catalog.heldWorkspaces).toBe(1);
  });

  it("log a skipped file once, not again when they are read after an idle let-go", async () => {
    const dir = join(temp.layout.partition("connections").dir(temp.ws), "catalog");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "com.example~broken.json"), "{ not json");
    const catalog = openCatalog();
    expect(await catalog.workspaceProblems(temp.ws)).toHaveLength(1);
    await catalog.sweep(time.clock() + CATALOG_INDEX_IDLE_MS);
    expect(await catalog.workspaceProblems(temp.ws)).toHaveLength(1);
    const skipped = logged.lines.filter((line) => line.msg === "workspace catalog entry skipped");
    expect(skipped).toHaveLength(1);
  });

  it("past connections.catalogCacheBytes, the least recently used are let go and read again true to the disk (adr/0179)", async () => {
    const a = temp.ws;
    const b = (await temp.workspaces.create("B", ALICE)).id;
    const c = (await temp.workspaces.create("C", ALICE)).id;
    const pad = "x".repeat(16 * 1024);
    const tenFrom = (from: number) => Array.from({ length: 10 }, (_, i) => server(from + i, pad));
    const idsOf = (servers: ServerJson[]) => servers.map((s) => catalogIdOf(s.name)).sort();
    await store(a, tenFrom(0));
    await store(b, tenFrom(100));
    await store(c, tenFrom(200));
    // Room for two workspaces' entries, not three.
    const budget = Math.floor(2.5 * (await weight(a)));
    const catalog = openCatalog(budget);
    await catalog.list(a);
    await catalog.list(b);
    expect(catalog.heldWorkspaces).toBe(2);
    expect(catalog.heldBytes).toBe((await weight(a)) + (await weight(b)));
    await catalog.list(c);
    // a, the least recently used, is let go long before its idle time.
    expect(catalog.heldWorkspaces).toBe(2);
    expect(catalog.heldBytes).toBeLessThanOrEqual(budget);

    // An operator's edit of a's folder while it is let go shows at its next use (b is let go).
    await unlink(join(catalogDir(a), "com.example~s0.json"));
    await store(a, [server(50)]);
    expect(ids(await catalog.list(a))).toEqual(idsOf([...tenFrom(1).slice(0, 9), server(50)]));

    // A write to a holds once a is let go and read again.
    await catalog.add(a, ALICE, server(60), NO_CALLER);
    await catalog.list(b);
    await catalog.list(c);
    expect(catalog.heldWorkspaces).toBe(2);
    expect(ids(await catalog.list(a))).toContain("com.example~s60");

    // A delete from b, whose index is read again for it, holds once b is let go and read again.
    await catalog.remove(b, "com.example~s100", NO_CALLER);
    await catalog.list(c);
    await catalog.list(a);
    expect(ids(await catalog.list(b))).toEqual(idsOf(tenFrom(101).slice(0, 9)));

    // What memory says is what a fresh read of the disk says.
    const fresh = openCatalog();
    for (const ws of [a, b, c]) expect(ids(await catalog.list(ws))).toEqual(ids(await fresh.list(ws)));
    expect(catalog.heldBytes).toBeLessThanOrEqual(budget);
  });
});
