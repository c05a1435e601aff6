import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, type TestContext } from "vitest";
import { BootError } from "../../src/errors.ts";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import { loadInstance, parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { startAtrium } from "../../src/server.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { type CliProcess, runAtriumCli, spawnAtriumCli } from "../helpers/cli.ts";
import { addMember } from "../helpers/members.ts";
import { memoryLog } from "../helpers/memory-log.ts";

const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

type OnFinished = TestContext["onTestFinished"];

// A test that spawns the CLI cleans up through its own onTestFinished, so the order is
// "stop the process, then remove its folder" whatever else the test registered.
async function tempDir(onFinished: OnFinished): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-boot-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function started(options: Parameters<typeof startTestAtrium>[0] = {}): Promise<TestAtrium> {
  const instance = await startTestAtrium(options);
  cleanups.push(() => instance.stop());
  return instance;
}

const HTTP = { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" };

/** A loopback port held by another listener until the test ends: starting on it fails. */
async function holdPort(onFinished: OnFinished): Promise<number> {
  const blocker: Server = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  onFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  return (blocker.address() as { port: number }).port;
}

/** An instance.json for the CLI, written into `dir`. */
async function writeInstance(dir: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const path = join(dir, "instance.json");
  const instance = {
    auth: { adapter: "dev" },
    storage: { root: "./data" },
    http: HTTP,
    log: { level: "silent" },
    ...overrides,
  };
  await writeFile(path, JSON.stringify(instance, null, 2));
  return path;
}

function trackCli(cli: CliProcess, onFinished: OnFinished): CliProcess {
  onFinished(async () => {
    await cli.stop();
  });
  return cli;
}

describe("boot refuses a data root it does not understand", () => {
  it("a corrupted workspace.json stops boot, naming the workspace", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();
    await writeFile(join(first.root, ws, "workspace.json"), '{"id": "ws_trunc');

    const failure = await startTestAtrium({ dir: first.dir }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BootError);
    expect((failure as Error).message).toContain(ws);
    expect((failure as Error).message).toMatch(/corrupt/);
  });

  it("a workspace.json that describes another workspace stops boot, naming it", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();
    await writeFile(
      join(first.root, ws, "workspace.json"),
      JSON.stringify({ id: "ws_0000000000000000", name: "x", members: [] }),
    );
    await expect(startTestAtrium({ dir: first.dir })).rejects.toThrow(ws);
  });

  it.for([
    ["folder", "notes"],
    ["folder", "ws_NOTHEX0000000000"],
    ["file", "README.txt"],
  ] as const)(
    "a stray %s in the root stops boot, naming it: %s",
    async ([kind, name], { onTestFinished }) => {
      const dir = await tempDir(onTestFinished);
      const root = join(dir, "data");
      await mkdir(root);
      if (kind === "folder") await mkdir(join(root, name));
      else await writeFile(join(root, name), "hello");

      const failure = await startTestAtrium({ dir }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BootError);
      expect((failure as Error).message).toContain(`"${name}"`);
      expect((failure as Error).message).toContain(kind);
    },
  );

  it.for([
    ["a person's profile", "users"],
    ["the tasks' schedule-index mark", "tasks"],
  ] as const)(
    "%s that is not JSON stops boot, naming the file and where, not its text",
    async ([, which]) => {
      const first = await started();
      await first.rest("alice", "GET", "/v1/workspaces");
      await first.close();
      let path: string;
      if (which === "users") {
        const users = join(first.root, "_instance", "users");
        const [owner] = await readdir(users);
        path = join(users, owner as string, "profile.json");
      } else {
        path = join(first.root, "_instance", "tasks", "schedules", "index-built-v1.json");
        expect(existsSync(path)).toBe(true);
      }
      await writeFile(path, '{"displayName": sk-live-not-echoed}');

      const failure = await startTestAtrium({ dir: first.dir }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BootError);
      const message = (failure as Error).message;
      expect(message).toContain(`${path} is not valid JSON (line 1, column 17).`);
      expect(message).toContain("Restore it from a backup, or move it out");
      expect(message).not.toContain("sk-live");
    },
  );

  it("the CLI reports a stray folder and exits 1", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    await mkdir(join(dir, "data", "stray-folder"), { recursive: true });
    const instance = await writeInstance(dir);
    const exit = await runAtriumCli(["serve", "--instance", instance], dir);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('"stray-folder"');
    expect(exit.stdout).not.toMatch(/listening/);
  });
});

describe("the instance file", () => {
  it("serve without an instance.json exits non-zero and says to copy instance.example.json", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const exit = await runAtriumCli(["serve"], dir);
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(exit.stderr).toContain("instance.example.json");
    expect(exit.stderr).toContain("instance.json");
    expect(await readdir(dir)).toEqual([]);
  });

  it.for([
    ["an unknown field", { http: { ...HTTP, tls: true } }, /http: unknown field "tls"/],
    ["a wrong type", { http: { ...HTTP, port: "8080" } }, /http\.port: must be integer/],
    ["an unknown adapter", { auth: { adapter: "magic" } }, /auth\.adapter: must be one of "dev"/],
    ["a top-level unknown field", { plugins: [] }, /\(top level\): unknown field "plugins"/],
    ["a missing field", { storage: {} }, /storage: missing field "root"/],
  ] as const)(
    "an instance.json with %s is refused, naming the field",
    async ([, overrides, message], { onTestFinished }) => {
      const dir = await tempDir(onTestFinished);
      const path = await writeInstance(dir, overrides);
      const failure = await loadInstance(path).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BootError);
      expect((failure as Error).message).toMatch(message);
    },
  );

  it("the CLI refuses a bad instance.json with exit 1 and names the field", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const instance = await writeInstance(dir, { auth: { adapter: "magic" } });
    const exit = await runAtriumCli(["serve", "--instance", instance], dir);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toMatch(/auth\.adapter: must be one of "dev"/);
    expect(exit.stdout).not.toMatch(/listening/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("--port and --data override the file's port and root", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    // Hold the file's port, so that starting on it would fail: only the override can succeed.
    const heldPort = await holdPort(onTestFinished);
    const instance = await writeInstance(dir, {
      storage: { root: "./file-root" },
      http: { host: "127.0.0.1", port: heldPort, publicUrl: `http://127.0.0.1:${heldPort}` },
    });

    const cli = trackCli(
      spawnAtriumCli(["serve", "--instance", instance, "--port", "0", "--data", "cli-data"], dir),
      onTestFinished,
    );
    const [, url] = await cli.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    await cli.waitForOutput(/MCP URL of/);
    expect(new URL(url ?? "").port).not.toBe(String(heldPort));

    const response = await fetch(`${url}/v1/bootstrap`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { workspaces: Array<{ id: string; mcpUrl: string }> };
    const ws = body.workspaces[0]?.id ?? "";
    expect(body.workspaces[0]?.mcpUrl).toBe(`${url}/mcp/${ws}`);
    expect(await readdir(join(dir, "cli-data"))).toContain(ws);
    expect(existsSync(join(dir, "file-root"))).toBe(false);

    const exit = await cli.stop();
    expect(exit.code).toBe(0);
  });
});

describe("a boot that fails after its apps started", () => {
  it("stops them, and leaves the root free for the next boot", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const heldPort = await holdPort(onTestFinished);
    const seen: string[] = [];
    const recorder: PlatformApp = {
      name: "recorder",
      start: () => {
        seen.push("started");
        return { tools: new AppTools("recorder"), stop: async () => void seen.push("stopped") };
      },
    };
    const config = (port: number) =>
      parseInstance(
        {
          auth: { adapter: "dev" },
          storage: { root: "./data" },
          http: { host: "127.0.0.1", port, publicUrl: "http://127.0.0.1:8787" },
        },
        { source: "test", baseDir: dir },
      );
    const log = createLogger("silent");

    const boot = startAtrium(config(heldPort), { log, apps: [...PLATFORM_APPS, recorder] });
    await expect(boot).rejects.toBeInstanceOf(BootError);
    await expect(boot).rejects.toThrow("that port is taken");
    // An in-process start (a test, an embedder) keeps running after a failed boot: nothing the
    // boot started may go on in it.
    expect(seen).toEqual(["started", "stopped"]);

    const again = await startAtrium(config(0), { log, apps: [...PLATFORM_APPS, recorder] });
    onTestFinished(() => again.close());
    expect((await fetch(`${again.url}/v1/health`)).status).toBe(200);
  });
});

describe("a configured folder that does not exist", () => {
  it("is warned about at boot, naming the field and the path, and boot goes on", async () => {
    const { log, lines } = memoryLog();
    const instance = await startTestAtrium({
      log,
      skills: { orgDir: "no-such-skills" },
      sections: { connections: { catalogDir: "no-such-catalog" } },
    });
    cleanups.push(() => instance.stop());
    const warned = lines.filter((line) => /names a folder that does not exist/.test(String(line.msg)));
    expect(warned.map((line) => [line.field, line.path])).toEqual([
      ["skills.orgDir", join(instance.dir, "no-such-skills")],
      ["connections.catalogDir", join(instance.dir, "no-such-catalog")],
    ]);
  });

  it("is not warned about once it exists", async () => {
    const { log, lines } = memoryLog();
    const dir = await mkdtemp(join(tmpdir(), "atrium-folders-"));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, "org-skills"));
    const instance = await startTestAtrium({ dir, log, skills: { orgDir: "org-skills" } });
    cleanups.push(() => instance.stop());
    expect(lines.filter((line) => /names a folder that does not exist/.test(String(line.msg)))).toEqual([]);
  });
});

describe("state survives a restart", () => {
  it("workspaces, members and files are all there after a restart on the same root", async () => {
    const first = await started();
    const home = await bootstrapWorkspace(first, "alice");
    await first.rest("bob", "GET", "/v1/workspaces");
    const created = await first.rest("alice", "POST", "/v1/workspaces", { name: "Project X" });
    const project = ((await created.json()) as { id: string }).id;
    const bobId = (await first.atrium.users.findByEmail("bob@example.test"))?.id;
    await addMember(
      first.rest.bind(first),
      "alice",
      project,
      "bob",
      { principalId: bobId as string },
      "admin",
    );
    const upload = await first.rest(
      "alice",
      "POST",
      `/v1/workspaces/${project}/files?name=plan.txt`,
      "the plan",
      {
        "content-type": "text/plain",
      },
    );
    const fileId = ((await upload.json()) as { id: string }).id;

    const second = await first.restart();
    cleanups.push(() => second.stop());

    const list = await second.rest("alice", "GET", "/v1/workspaces");
    const workspaces = ((await list.json()) as { workspaces: Array<{ id: string; name: string }> })
      .workspaces;
    expect(workspaces.map((w) => w.id).sort()).toEqual([home, project].sort());
    expect(workspaces.find((w) => w.id === project)?.name).toBe("Project X");
    expect(second.atrium.workspaces.roleOf(project, bobId ?? "")).toBe("admin");
    // Bob has not signed in since the restart; adding by email still finds him.
    expect(await second.atrium.users.findByEmail("bob@example.test")).toMatchObject({ id: bobId });

    const download = await second.rest("alice", "GET", `/v1/files/${fileId}`);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("text/plain");
    expect(await download.text()).toBe("the plan");
  });
});

describe("the dev provider", () => {
  it("serves every request as the local developer and refuses a credential", async () => {
    const instance = await started({ dev: true });
    const response = await instance.rest(null, "GET", "/v1/bootstrap");
    expect(response.status).toBe(200);
    const body = (await response.json()) as { principal: { id: string }; workspaces: unknown[] };
    expect(body.principal.id).toBe(DEV_PRINCIPAL.id);
    expect(body.workspaces).toHaveLength(1);
    const withToken = await instance.rest(null, "GET", "/v1/bootstrap", undefined, {
      authorization: "Bearer x",
    });
    expect(withToken.status).toBe(401);
  });
});

describe("what an operator puts among owners' folders", () => {
  it("a copy of an owner folder (usr_….bak) is left alone, said once at boot, and boot goes on", async () => {
    const first = await started();
    const ws = await bootstrapWorkspace(first, "alice");
    const upload = await first.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=plan.txt`, "the plan", {
      "content-type": "text/plain",
    });
    const fileId = ((await upload.json()) as { id: string }).id;
    const files = join(first.dir, "data", ws, "files");
    const [owner] = await readdir(files);
    await cp(join(files, owner as string), join(files, `${owner}.bak`), { recursive: true });

    const { log, lines } = memoryLog();
    const second = await first.restart({ log });
    cleanups.push(() => second.stop());
    // The copy's ids are not taken for a second owner's: the file is its owner's, by its bare id.
    const download = await second.rest("alice", "GET", `/v1/files/${fileId}`);
    expect(await download.text()).toBe("the plan");
    const said = lines.filter((line) => /named like no owner id/.test(String(line.msg)));
    expect(said).toHaveLength(1);
    expect(said[0]?.folders).toEqual([join(files, `${owner}.bak`)]);
  });
});
