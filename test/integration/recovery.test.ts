import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HOUSEKEEPING_INTERVAL_MS } from "../../src/housekeeping.ts";
import { parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { startAtrium } from "../../src/server.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { listTree } from "../helpers/fs-tree.ts";

// Each test lays out on disk, by hand, one shape a crash leaves mid-write, boots (restart),
// and checks the shape is removed or completed by its rule (src/storage/recovery.ts) and that
// requests afterwards behave as if the crash never happened.

const instances: TestAtrium[] = [];

afterEach(async () => {
  while (instances.length > 0) await instances.pop()?.stop();
});

async function started(): Promise<TestAtrium> {
  const instance = await startTestAtrium();
  instances.push(instance);
  return instance;
}

/** Closes `instance` and boots a new one on its root; the new one is cleaned up too. */
async function rebooted(instance: TestAtrium): Promise<TestAtrium> {
  const next = await instance.restart();
  instances.push(next);
  return next;
}

const ALICE = testPrincipal("alice").id;
const SKILL = { name: "release-notes", description: "How we write release notes.", body: "Be brief." };

async function createSkill(instance: TestAtrium, ws: string, body = SKILL.body): Promise<void> {
  const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, { ...SKILL, body });
  expect(response.status).toBe(201);
}

async function skillsOf(instance: TestAtrium, ws: string) {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills`);
  expect(response.status).toBe(200);
  return (await response.json()) as {
    skills: Array<{ name: string; scope: string; body?: string }>;
    problems: Array<{ name: string }>;
  };
}

async function historyOf(instance: TestAtrium, ws: string, name = SKILL.name) {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/skills/${name}/history`);
  return {
    status: response.status,
    body: (await response.json()) as { versions: Array<{ version: number }> },
  };
}

async function versionText(instance: TestAtrium, ws: string, version: number): Promise<string> {
  const response = await instance.rest(
    "alice",
    "GET",
    `/v1/workspaces/${ws}/skills/${SKILL.name}/history/${version}`,
  );
  expect(response.status).toBe(200);
  return response.text();
}

async function tempEntries(root: string): Promise<string[]> {
  return (await listTree(root)).filter((path) => path.split("/").some((part) => part.startsWith(".tmp-")));
}

const HOUR_AGO = new Date(Date.now() - 2 * 60 * 60 * 1000);

describe("boot removes what interrupted writes left (R1–R4)", () => {
  it("a workspace staging folder, a workspace.json temp file and file staging and delete folders are removed", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    const upload = await first.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=a.txt`, "kept", {
      "content-type": "text/plain",
    });
    expect(upload.status).toBe(201);
    await first.close();
    const owner = join(first.root, ws, "files", ALICE);
    const leftovers = [
      join(first.root, ".tmp-ws_00000000000000aa-0a0b0c0d", "workspace.json"),
      join(first.root, ws, ".tmp-workspace.json-0a0b0c0d0e0f"),
      join(owner, ".tmp-fl_000000000000000000000001", "content"),
      join(owner, ".tmp-deleted-fl_000000000000000000000002", "meta.json"),
      join(owner, ".tmp-deleted-fl_000000000000000000000003-0a0b0c0d", "content"),
      join(first.root, "_instance", "sessions", ".tmp-abcdefgh.json-0a0b0c0d0e0f"),
      join(first.root, "_instance", "users", ALICE, ".tmp-profile.json-0a0b0c0d0e0f"),
    ];
    for (const path of leftovers) {
      await mkdir(join(path, ".."), { recursive: true });
      await writeFile(path, "half");
    }
    // Directly in _instance/ a temp entry waits a minute even at boot (another process may be
    // taking the instance lock there): this one is old.
    const instanceTemp = join(first.root, "_instance", ".tmp-session-secret-0a0b0c0d0e0f");
    await writeFile(instanceTemp, "half");
    await utimes(instanceTemp, HOUR_AGO, HOUR_AGO);

    const second = await rebooted(first);
    expect(await tempEntries(second.root)).toEqual([]);
    const list = await second.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    const body = (await list.json()) as { files: Array<{ name: string }> };
    expect(body.files.map((f) => f.name)).toEqual(["a.txt"]);
  });

  it("a young temp entry directly in _instance/ is left for its writer", async () => {
    const first = await started();
    await first.close();
    const young = join(first.root, "_instance", ".tmp-instance.lock-0a0b0c0d0e0f");
    await mkdir(join(first.root, "_instance"), { recursive: true });
    await writeFile(young, "someone else's");
    await rebooted(first);
    expect(existsSync(young)).toBe(true);
  });
});

describe("skills: a leftover never changes what a later request does", () => {
  it("a crashed skill delete's folder does not break the next delete of that name, and boot removes it", async () => {
    const instance = await started();
    const ws = await bootstrapWorkspace(instance, "alice");
    const skills = join(instance.root, ws, "skills");
    // What the old delete left when it died between its rename and its removal.
    await mkdir(join(skills, `.tmp-deleted-${SKILL.name}`), { recursive: true });
    await writeFile(join(skills, `.tmp-deleted-${SKILL.name}`, "SKILL.md"), "old");

    await createSkill(instance, ws);
    const deleted = await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/${SKILL.name}`);
    expect(deleted.status).toBe(204);

    const second = await rebooted(instance);
    expect(await tempEntries(second.root)).toEqual([]);
  });

  it("a skill folder without SKILL.md (a create that never committed) is removed, so it is no problem", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();
    await mkdir(join(first.root, ws, "skills", "half-made"), { recursive: true });
    await writeFile(join(first.root, ws, "skills", "half-made", ".tmp-SKILL.md-0a0b0c0d0e0f"), "---");

    const second = await rebooted(first);
    const listed = await skillsOf(second, ws);
    expect(listed.problems.map((p) => p.name)).not.toContain("half-made");
    expect(existsSync(join(second.root, ws, "skills", "half-made"))).toBe(false);
  });

  it("a skill folder an operator filled but gave no SKILL.md is kept and still reported", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();
    await mkdir(join(first.root, ws, "skills", "in-progress"), { recursive: true });
    await writeFile(join(first.root, ws, "skills", "in-progress", "notes.md"), "operator's file");

    const second = await rebooted(first);
    expect((await skillsOf(second, ws)).problems.map((p) => p.name)).toContain("in-progress");
    expect(existsSync(join(second.root, ws, "skills", "in-progress", "notes.md"))).toBe(true);
  });

  it("a deleted skill's history that a crash left (R9) is removed, so a new skill of its name starts anew", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await createSkill(first, ws);
    await first.close();
    // The delete's commit point passed (the folder is gone); its history removal did not run.
    await rm(join(first.root, ws, "skills", SKILL.name), { recursive: true });
    const versions = join(first.root, ws, "skills", ".history", SKILL.name);
    expect(existsSync(versions)).toBe(true);

    const second = await rebooted(first);
    expect(existsSync(versions)).toBe(false);
    await createSkill(second, ws, "Be briefer.");
    expect((await historyOf(second, ws)).body.versions.map((v) => v.version)).toEqual([1]);
  });

  it("a history version without its metadata gets it, and is listed", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await createSkill(first, ws);
    await first.close();
    const versions = join(first.root, ws, "skills", ".history", SKILL.name);
    await rm(join(versions, "1.json"));

    const second = await rebooted(first);
    const history = await historyOf(second, ws);
    expect(history.status).toBe(200);
    expect(history.body.versions.map((v) => v.version)).toEqual([1]);
  });

  it("metadata without its history version is removed", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await createSkill(first, ws);
    await first.close();
    const versions = join(first.root, ws, "skills", ".history", SKILL.name);
    await writeFile(
      join(versions, "2.json"),
      JSON.stringify({ version: 2, savedAt: new Date().toISOString() }),
    );

    const second = await rebooted(first);
    expect((await historyOf(second, ws)).body.versions.map((v) => v.version)).toEqual([1]);
    expect(await readdir(versions)).toEqual(["1.json", "1.md"]);
  });

  it("a committed SKILL.md whose version was never recorded is recorded as the newest", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await createSkill(first, ws);
    await first.close();
    // A save that died after replacing SKILL.md, before writing its history entry.
    const current = join(first.root, ws, "skills", SKILL.name, "SKILL.md");
    const edited = (await readFile(current, "utf8")).replace("Be brief.", "Be briefer.");
    await writeFile(current, edited);

    const second = await rebooted(first);
    expect((await historyOf(second, ws)).body.versions.map((v) => v.version)).toEqual([1, 2]);
    expect(await versionText(second, ws, 2)).toBe(edited);
  });

  it("a newest history version that never became current no longer stands as the newest", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await createSkill(first, ws);
    await first.close();
    // What the old write order left: version 2 written, SKILL.md never replaced.
    const versions = join(first.root, ws, "skills", ".history", SKILL.name);
    await writeFile(join(versions, "2.md"), "---\nname: release-notes\ndescription: never current\n---\nx\n");
    await writeFile(
      join(versions, "2.json"),
      JSON.stringify({ version: 2, savedAt: new Date().toISOString() }),
    );

    const second = await rebooted(first);
    const versionsNow = (await historyOf(second, ws)).body.versions.map((v) => v.version);
    expect(versionsNow).toEqual([1, 2, 3]);
    const current = await readFile(join(second.root, ws, "skills", SKILL.name, "SKILL.md"), "utf8");
    expect(await versionText(second, ws, 3)).toBe(current);

    // A later edit is the next version, not a rewrite of one that exists.
    const edit = await second.rest("alice", "PATCH", `/v1/workspaces/${ws}/skills/${SKILL.name}`, {
      intent: "replace_body",
      body: "Edited after recovery.",
    });
    expect(edit.status).toBe(200);
    expect((await historyOf(second, ws)).body.versions.map((v) => v.version)).toEqual([1, 2, 3, 4]);
  });

  it("user-scope skills are recovered too", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    const created = await first.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, {
      ...SKILL,
      scope: "user",
    });
    expect(created.status).toBe(201);
    await first.close();
    const skills = join(first.root, "_instance", "users", ALICE, "skills");
    await mkdir(join(skills, ".tmp-deleted-old-one", "old-one"), { recursive: true });
    await rm(join(skills, ".history", SKILL.name, "1.json"));

    const second = await rebooted(first);
    expect(await tempEntries(second.root)).toEqual([]);
    const history = await second.rest(
      "alice",
      "GET",
      `/v1/workspaces/${ws}/skills/${SKILL.name}/history?scope=user`,
    );
    expect(history.status).toBe(200);
  });
});

describe("housekeeping", () => {
  it("removes an old leftover while the server runs", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();
    const config = parseInstance(
      {
        auth: { adapter: "dev" },
        storage: { root: "./data" },
        http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
        log: { level: "silent" },
      },
      { source: "test instance", baseDir: first.dir },
    );
    const time = new FakeTime(Date.now());
    const running = await startAtrium(config, {
      log: createLogger("silent"),
      clock: time.clock,
      timers: time.timers,
    });
    try {
      // Made after boot, so only the housekeeping loop can remove it.
      const leftover = join(first.root, ws, ".tmp-workspace.json-0a0b0c0d0e0f");
      await writeFile(leftover, "{");
      await utimes(leftover, HOUR_AGO, HOUR_AGO);
      await time.advance(HOUSEKEEPING_INTERVAL_MS - 1);
      expect(existsSync(leftover)).toBe(true);
      await time.advance(1);
      // The round runs on real disk: wait for it to end (bounded), not for time to pass.
      const deadline = Date.now() + 10_000;
      while (existsSync(leftover) && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      expect(existsSync(leftover)).toBe(false);
    } finally {
      await running.close();
    }
  });
});
