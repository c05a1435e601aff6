import { mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceNotFound } from "../../../../src/errors.ts";
import { Catalog, MAX_WORKSPACE_ENTRIES } from "../../../../src/platform/connections/catalog.ts";
import type { ServerJson } from "../../../../src/platform/connections/catalog-entry.ts";
import { CATALOG_RECHECK_MS } from "../../../../src/platform/connections/catalog-folder.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let otherWs: string;
let catalogDir: string;
let outside: string;
let time: FakeTime;
let logged: ReturnType<typeof memoryLog>;

function server(name: string, extra: Partial<ServerJson> = {}): ServerJson {
  return {
    name,
    description: `The ${name} server`,
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: `https://${name.split("/")[1]}.example.com/mcp` }],
    ...extra,
  };
}

function openCatalog(dir: string | undefined = catalogDir): Catalog {
  return new Catalog({
    dir,
    storage: temp.layout.partition("connections"),
    clock: time.clock,
    log: logged.log,
  });
}

async function put(file: string, value: unknown): Promise<void> {
  await writeFile(join(catalogDir, file), typeof value === "string" ? value : JSON.stringify(value));
}

function skipped(): unknown[] {
  return logged.lines.filter((line) => String(line.msg).includes("skipped"));
}

beforeEach(async () => {
  temp = await openTempRoot("catalog", ALICE);
  otherWs = (await temp.workspaces.create("Other", ALICE)).id;
  outside = await mkdtemp(join(tmpdir(), "atrium-catalog-dir-"));
  catalogDir = join(outside, "catalog");
  await mkdir(catalogDir);
  time = new FakeTime();
  logged = memoryLog();
});

afterEach(async () => {
  await temp.remove();
  await rm(outside, { recursive: true, force: true });
});

describe("the operator's catalog folder", () => {
  it("lists each good server.json by its id, and skips each bad file once with what is wrong", async () => {
    await put("a-weather.json", server("io.github.acme/weather"));
    await put("b-broken.json", "{ not json");
    await put("c-no-version.json", { name: "com.example/x", description: "d" });
    await put("d-dup.json", server("io.github.ACME/Weather"));
    await put("e-huge.json", server("com.example/huge", { _meta: { pad: "x".repeat(70_000) } }));
    await put("notes.txt", "not a catalog entry");
    await put(".tmp-z.json-1234", server("com.example/temp"));
    await mkdir(join(catalogDir, "sub.json"));
    const catalog = openCatalog();

    expect((await catalog.instanceEntries()).map((e) => [e.id, e.scope])).toEqual([
      ["io.github.acme~weather", "instance"],
    ]);
    expect(await catalog.instanceProblems()).toEqual([
      { file: "b-broken.json", message: expect.stringMatching(/^Not valid JSON/) },
      {
        file: "c-no-version.json",
        message: expect.stringContaining("must have required property 'version'"),
      },
      {
        file: "d-dup.json",
        message: "Server io.github.ACME/Weather is in a-weather.json already; one file per server.",
      },
      { file: "e-huge.json", message: expect.stringContaining("Larger than 65536 bytes") },
    ]);
    expect(skipped()).toHaveLength(4);
    expect(skipped()[0]).toMatchObject({ level: 40, catalogFile: "b-broken.json" });

    // Another look, and a change elsewhere in the folder: the same problems are not logged again.
    await time.advance(CATALOG_RECHECK_MS);
    await catalog.instanceEntries();
    await put("f-more.json", server("com.example/more"));
    await time.advance(CATALOG_RECHECK_MS);
    expect((await catalog.instanceEntries()).map((e) => e.id)).toEqual([
      "io.github.acme~weather",
      "com.example~more",
    ]);
    expect(skipped()).toHaveLength(4);
  });

  it("never quotes a broken file's text in a problem or a log line", async () => {
    await put("pasted.json", '{"name": "com.example/x", "headers": Bearer sk-live-55}');
    await put("cut.json", "");
    const catalog = openCatalog();
    expect(await catalog.instanceProblems()).toEqual([
      { file: "cut.json", message: "Not valid JSON (it ends too early)." },
      { file: "pasted.json", message: expect.stringMatching(/^Not valid JSON/) },
    ]);
    expect(JSON.stringify(await catalog.instanceProblems())).not.toContain("sk-live-55");
    expect(JSON.stringify(logged.lines)).not.toContain("sk-live-55");
    await put("cut.json", '{"name": 1,, }');
    await time.advance(CATALOG_RECHECK_MS);
    expect((await catalog.instanceProblems())[0]?.message).toMatch(
      /^Not valid JSON \((line \d+, column \d+|at character \d+)\)\.$/,
    );
  });

  it("is reread when a file is added, changed or removed, and served from memory between looks", async () => {
    await put("weather.json", server("io.github.acme/weather"));
    const catalog = openCatalog();
    expect(await catalog.instanceEntries()).toHaveLength(1);

    await put("maps.json", server("io.github.acme/maps"));
    expect(await catalog.instanceEntries()).toHaveLength(1);
    await time.advance(CATALOG_RECHECK_MS);
    expect((await catalog.instanceEntries()).map((e) => e.id)).toEqual([
      "io.github.acme~maps",
      "io.github.acme~weather",
    ]);

    // Rewritten in place, same name: the size or mtime moves, so the entry does.
    await put("weather.json", server("io.github.acme/weather", { description: "Forecasts, now hourly" }));
    await time.advance(CATALOG_RECHECK_MS);
    expect((await catalog.get(temp.ws, "io.github.acme~weather")).server.description).toBe(
      "Forecasts, now hourly",
    );

    await unlink(join(catalogDir, "maps.json"));
    await time.advance(CATALOG_RECHECK_MS);
    expect((await catalog.instanceEntries()).map((e) => e.id)).toEqual(["io.github.acme~weather"]);
  });

  it("reports a missing folder once instead of failing, and lists it once it exists", async () => {
    await rm(catalogDir, { recursive: true });
    const catalog = openCatalog();
    expect(await catalog.instanceEntries()).toEqual([]);
    expect(await catalog.instanceProblems()).toEqual([
      { file: ".", message: expect.stringContaining("does not exist") },
    ]);
    await time.advance(CATALOG_RECHECK_MS);
    await catalog.instanceEntries();
    expect(skipped()).toHaveLength(1);

    await mkdir(catalogDir);
    await put("weather.json", server("io.github.acme/weather"));
    await time.advance(CATALOG_RECHECK_MS);
    expect(await catalog.instanceEntries()).toHaveLength(1);
    expect(await catalog.instanceProblems()).toEqual([]);
  });

  it("is empty when instance.json names no folder", async () => {
    const catalog = openCatalog(undefined);
    expect(await catalog.instanceEntries()).toEqual([]);
    expect(await catalog.list(temp.ws)).toEqual([]);
  });
});

describe("a workspace's own entries", () => {
  it("are visible in that workspace only, with who added them and when", async () => {
    await put("weather.json", server("io.github.acme/weather"));
    const catalog = openCatalog();
    const added = await catalog.add(temp.ws, ALICE, server("com.example/internal-crm"), NO_CALLER);
    expect(added).toEqual({
      id: "com.example~internal-crm",
      scope: "workspace",
      server: server("com.example/internal-crm"),
      addedBy: ALICE,
      addedAt: new Date(time.clock()).toISOString(),
    });
    expect((await catalog.list(temp.ws)).map((e) => e.id)).toEqual([
      "io.github.acme~weather",
      "com.example~internal-crm",
    ]);
    expect((await catalog.list(otherWs)).map((e) => e.id)).toEqual(["io.github.acme~weather"]);
    await expect(catalog.get(otherWs, "com.example~internal-crm")).rejects.toMatchObject({
      code: "catalog_entry_not_found",
    });
    await expect(catalog.remove(otherWs, "com.example~internal-crm", NO_CALLER)).rejects.toMatchObject({
      status: 404,
    });
    expect(await catalog.list(temp.ws)).toHaveLength(2);
  });

  it("are stored under <ws>/connections/catalog/<id>.json and read back by a new process", async () => {
    await openCatalog().add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    const path = join(temp.layout.partition("connections").dir(temp.ws), "catalog", "com.example~crm.json");
    expect(JSON.parse(await readFile(path, "utf8"))).toMatchObject({ server: { name: "com.example/crm" } });
    expect((await openCatalog().list(temp.ws)).map((e) => e.id)).toEqual(["com.example~crm"]);
  });

  it("are removed by id, from disk and from the listing", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    await catalog.remove(temp.ws, "com.example~crm", NO_CALLER);
    expect(await catalog.list(temp.ws)).toEqual([]);
    expect(await openCatalog().list(temp.ws)).toEqual([]);
    await expect(catalog.remove(temp.ws, "com.example~crm", NO_CALLER)).rejects.toMatchObject({
      code: "catalog_entry_not_found",
    });
  });

  it("refuse a second entry of one name, or one the operator's catalog has", async () => {
    await put("weather.json", server("io.github.acme/weather"));
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    await expect(catalog.add(temp.ws, ALICE, server("com.example/CRM"), NO_CALLER)).rejects.toMatchObject({
      status: 409,
      code: "catalog_entry_exists",
      message: expect.stringContaining("this workspace's catalog already"),
    });
    await expect(
      catalog.add(temp.ws, ALICE, server("io.github.acme/weather"), NO_CALLER),
    ).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining("instance's catalog already"),
    });
    // The operator's entries are theirs to remove.
    await expect(catalog.remove(temp.ws, "io.github.acme~weather", NO_CALLER)).rejects.toMatchObject({
      status: 403,
    });
  });

  it("refuse a bad server.json with what is wrong, writing nothing", async () => {
    const catalog = openCatalog();
    await expect(catalog.add(temp.ws, ALICE, { name: "x" }, NO_CALLER)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("Not a server.json Atrium can use"),
    });
    const secret = {
      type: "streamable-http",
      url: "https://x/mcp",
      headers: [{ name: "X-Key", isSecret: true, value: "k" }],
    };
    await expect(
      catalog.add(temp.ws, ALICE, server("com.example/x", { remotes: [secret] }), NO_CALLER),
    ).rejects.toMatchObject({
      status: 400,
    });
    await expect(readdir(temp.layout.partition("connections").dir(temp.ws))).rejects.toMatchObject({
      code: "ENOENT",
    });
  });

  it.each([
    "../../../etc/passwd",
    "..",
    "com.example~crm/../../x",
    "%2e%2e",
    ".tmp-x",
    "COM.EXAMPLE~CRM",
    "",
  ])("refuse the hostile id %j as not found, touching nothing", async (id) => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    await expect(catalog.get(temp.ws, id)).rejects.toMatchObject({ code: "catalog_entry_not_found" });
    await expect(catalog.remove(temp.ws, id, NO_CALLER)).rejects.toMatchObject({
      code: "catalog_entry_not_found",
    });
    expect((await openCatalog().list(temp.ws)).map((e) => e.id)).toEqual(["com.example~crm"]);
  });

  it("refuse a workspace that does not exist, without making its folder", async () => {
    const ghost = "ws_0000000000000000";
    await expect(
      openCatalog().add(ghost, ALICE, server("com.example/crm"), NO_CALLER),
    ).rejects.toBeInstanceOf(WorkspaceNotFound);
    await expect(readdir(join(temp.root, ghost))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it(`are at most ${MAX_WORKSPACE_ENTRIES} per workspace`, async () => {
    const catalog = openCatalog();
    for (let i = 0; i < MAX_WORKSPACE_ENTRIES; i++)
      await catalog.add(temp.ws, ALICE, server(`com.example/s${i}`), NO_CALLER);
    await expect(
      catalog.add(temp.ws, ALICE, server("com.example/one-more"), NO_CALLER),
    ).rejects.toMatchObject({
      code: "catalog_full",
    });
    expect(await catalog.list(otherWs)).toEqual([]);
  });

  it("of two racing adds of one name, exactly one wins", async () => {
    const [a, b] = await Promise.allSettled([
      openCatalog().add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER),
      openCatalog().add(temp.ws, ALICE, server("com.example/crm", { description: "Second" }), NO_CALLER),
    ]);
    expect([a.status, b.status].sort()).toEqual(["fulfilled", "rejected"]);
    expect(await openCatalog().list(temp.ws)).toHaveLength(1);
  });

  it("are shadowed by an operator's entry of the same id added later, and still removable", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm", { description: "Ours" }), NO_CALLER);
    await put("crm.json", server("com.example/crm", { description: "The operator's" }));
    await time.advance(CATALOG_RECHECK_MS);
    const listed = await catalog.list(temp.ws);
    expect(listed.map((e) => [e.scope, e.server.description])).toEqual([["instance", "The operator's"]]);
    expect((await catalog.get(temp.ws, "com.example~crm")).scope).toBe("instance");
    await catalog.remove(temp.ws, "com.example~crm", NO_CALLER);
    expect(await openCatalog().workspaceProblems(temp.ws)).toEqual([]);
  });

  it("skip a file edited by hand into something bad, reported once", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    const dir = join(temp.layout.partition("connections").dir(temp.ws), "catalog");
    await writeFile(
      join(dir, "com.example~crm.json"),
      JSON.stringify({ server: server("com.example/other"), addedBy: ALICE, addedAt: "x" }),
    );
    await writeFile(join(dir, "stray.json"), "{}");
    const fresh = openCatalog();
    expect(await fresh.list(temp.ws)).toEqual([]);
    expect(await fresh.workspaceProblems(temp.ws)).toEqual([
      { file: "com.example~crm.json", message: expect.stringContaining("Holds com.example/other") },
      { file: "stray.json", message: expect.stringContaining("Not a catalog entry's file name") },
    ]);
    expect(logged.lines.filter((l) => l.msg === "workspace catalog entry skipped")).toHaveLength(2);
  });

  it("stored before a rule refused a label's character (U+2028) still load, and are removed and added again", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    // What Atrium wrote for a title and a header's description holding U+2028, then accepted.
    const file = join(temp.layout.partition("connections").dir(temp.ws), "catalog", "com.example~crm.json");
    const stored = JSON.parse(await readFile(file, "utf8"));
    stored.server.title = "CRM\u2028Two";
    stored.server.remotes[0].headers = [{ name: "X-Team", description: "Your\u2028team" }];
    await writeFile(file, JSON.stringify(stored, null, 2));
    const fresh = openCatalog();
    expect((await fresh.list(temp.ws)).map((e) => e.server.title)).toEqual(["CRM\u2028Two"]);
    expect(await fresh.workspaceProblems(temp.ws)).toEqual([]);
    await fresh.remove(temp.ws, "com.example~crm", NO_CALLER);
    // As given, the label is judged: an add refuses it.
    await expect(
      fresh.add(temp.ws, ALICE, server("com.example/crm", { title: "CRM\u2028Two" }), NO_CALLER),
    ).rejects.toMatchObject({ status: 400 });
    expect((await fresh.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER)).id).toBe(
      "com.example~crm",
    );
  });

  it("skipped as a problem are still removed by their id, and an add of that id says why it is taken", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    const file = join(temp.layout.partition("connections").dir(temp.ws), "catalog", "com.example~crm.json");
    const stored = JSON.parse(await readFile(file, "utf8"));
    stored.server.remotes[0].headers = [{ name: "X-Key", isSecret: true, value: "k" }];
    await writeFile(file, JSON.stringify(stored));
    const fresh = openCatalog();
    expect(await fresh.list(temp.ws)).toEqual([]);
    expect(await fresh.workspaceProblems(temp.ws)).toEqual([
      { file: "com.example~crm.json", message: expect.stringContaining("is secret") },
    ]);
    await expect(fresh.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER)).rejects.toMatchObject({
      status: 409,
      code: "catalog_entry_exists",
      message: expect.stringContaining("skipped as a problem"),
    });
    await fresh.remove(temp.ws, "com.example~crm", NO_CALLER);
    expect(await fresh.workspaceProblems(temp.ws)).toEqual([]);
    await expect(readFile(file)).rejects.toMatchObject({ code: "ENOENT" });
    expect((await fresh.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER)).id).toBe(
      "com.example~crm",
    );
    expect((await openCatalog().list(temp.ws)).map((e) => e.id)).toEqual(["com.example~crm"]);
  });

  it("are read again after a read that failed, not remembered as empty", async () => {
    const partition = temp.layout.partition("connections").dir(temp.ws);
    await mkdir(partition);
    await writeFile(join(partition, "catalog"), "not a folder");
    const catalog = openCatalog();
    await expect(catalog.list(temp.ws)).rejects.toMatchObject({ code: "ENOTDIR" });
    await rm(join(partition, "catalog"));
    await openCatalog().add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    expect((await catalog.list(temp.ws)).map((e) => e.id)).toEqual(["com.example~crm"]);
  });

  it("leave a temp file behind only until recovery sweeps it", async () => {
    const catalog = openCatalog();
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    const dir = join(temp.layout.partition("connections").dir(temp.ws), "catalog");
    await writeFile(join(dir, ".tmp-com.example~x.json-abcdef"), "{");
    await catalog.recoverWorkspace(temp.ws, new Set(["connections"]), RecoveryPass.boot(time.clock()));
    expect(await readdir(dir)).toEqual(["com.example~crm.json"]);
  });

  // The unlink landed, then its folder's flush failed: the index kept the entry, listed and taken,
  // with no file behind it until a restart (ADR 0166).
  it("removed, whose unlink lands but whose folder's flush fails, are gone from the listing as from the disk", async () => {
    const catalog = openCatalog(undefined);
    await catalog.add(temp.ws, ALICE, server("com.example/crm"), NO_CALLER);
    const dir = join(temp.layout.partition("connections").dir(temp.ws), "catalog");
    const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    await journalDuring(() => catalog.remove(temp.ws, "com.example~crm", NO_CALLER), {
      sync: (path) => (path === dir ? eio() : undefined),
    });
    expect(await readdir(dir)).toEqual([]);
    expect(await catalog.list(temp.ws)).toEqual([]);
    expect(await openCatalog(undefined).list(temp.ws)).toEqual([]);
  });
});
