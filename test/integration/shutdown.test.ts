import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { type ClientRequest, type IncomingMessage, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, type TestContext } from "vitest";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import type { LockHolder } from "../../src/instance/lock.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { startTestAtrium } from "../helpers/atrium.ts";
import {
  type CliProcess,
  logEntries,
  spawnAtriumCli,
  spawnCaptured,
  writeCliInstance,
} from "../helpers/cli.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { memoryLog } from "../helpers/memory-log.ts";
import { writingStop } from "../helpers/writing-stop.ts";

// Issue 10, Reliability 1 and 2: a signal stops the server gracefully, and the commands an
// operator is given leave no orphan. Real processes, real signals.

// Each test boots real processes through tsx: many seconds each on a loaded machine.
const BOOT_MS = 90_000;
const SLOW = { timeout: 300_000 };
type OnFinished = TestContext["onTestFinished"];
const WORKTREE = fileURLToPath(new URL("../..", import.meta.url));

async function tempDir(onFinished: OnFinished): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-shutdown-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function serve(
  dir: string,
  drainSeconds: number,
  onFinished: OnFinished,
): Promise<{ cli: CliProcess; url: string; workspaceId: string }> {
  const instance = await writeCliInstance(dir, {
    http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787", drainSeconds },
  });
  const cli = spawnAtriumCli(["serve", "--instance", instance], dir);
  onFinished(async () => {
    await cli.stop();
  });
  const [, url, workspaceId] = await cli.waitForOutput(
    /MCP URL of "[^"]+": (http:\/\/127\.0\.0\.1:\d+)\/mcp\/(ws_[0-9a-f]{16})/,
    BOOT_MS,
  );
  return { cli, url: url ?? "", workspaceId: workspaceId ?? "" };
}

/** Polls `condition` until it holds; throws after `timeoutMs`. */
async function until(
  what: string,
  condition: () => Promise<boolean> | boolean,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An upload whose body is sent in chunks by the test; it is in flight until `finish()`. */
function startUpload(url: string, workspaceId: string) {
  const req: ClientRequest = request(`${url}/v1/workspaces/${workspaceId}/files?name=slow.txt`, {
    method: "POST",
    headers: { "content-type": "text/plain", "transfer-encoding": "chunked" },
  });
  const response = new Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }>(
    (resolve, reject) => {
      req.once("error", reject);
      req.once("response", (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.once("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.once("error", reject);
      });
    },
  );
  req.write("first part;");
  return { response, finish: () => req.end("second part") };
}

/** True once the server has begun storing the upload: its staging folder is on disk. */
async function uploadStaged(dir: string, workspaceId: string): Promise<boolean> {
  const ownerDir = join(dir, "data", workspaceId, "files", DEV_PRINCIPAL.id);
  const names = await readdir(ownerDir).catch(() => [] as string[]);
  return names.some((name) => name.startsWith(".tmp-"));
}

const refused = (url: string) =>
  fetch(`${url}/v1/health`).then(
    () => false,
    () => true,
  );

/**
 * An app whose scheduled job (a health probe to a hung remote) and whose own stop never end until
 * the test lets them: `release()` at the end, so nothing is left running.
 */
function hangingApp(onFinished: OnFinished): PlatformApp {
  let release: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => {
    release = resolve;
  });
  onFinished(() => release());
  return {
    name: "hanging",
    start: ({ scheduler }) => {
      scheduler.add({ name: "probe a hung remote", schedule: { everyMs: 1_000 }, run: () => hung });
      return { tools: new AppTools("hanging"), stop: () => hung };
    },
  };
}

async function startHanging(onFinished: OnFinished) {
  const time = new FakeTime();
  const { log, lines } = memoryLog();
  const instance = await startTestAtrium({
    clock: time.clock,
    timers: time.timers,
    log,
    apps: [...PLATFORM_APPS, hangingApp(onFinished)],
  });
  onFinished(() => instance.stop());
  await time.advance(1_000); // the probe starts, and hangs
  return { time, lines, atrium: instance.atrium, drainMs: instance.config.http.drainSeconds * 1000 };
}

describe("background work at a stop", () => {
  it("a scheduled job and an app's stop still running are waited for no longer than the drain deadline", async ({
    onTestFinished,
  }) => {
    const { time, lines, atrium, drainMs } = await startHanging(onTestFinished);
    let closed = false;
    const closing = atrium.close().then(() => {
      closed = true;
    });
    await settle();
    expect(closed).toBe(false);
    await time.advance(drainMs);
    await closing;
    expect(lines.find((line) => /left background work running/.test(String(line.msg)))).toMatchObject({
      jobs: ["probe a hung remote"],
      apps: ["hanging"],
    });
    expect(lines.some((line) => line.msg === "shutdown finished")).toBe(true);
  });

  // ADR 0093 (amended): with drainSeconds 0 the stop waited for no background work at all, and
  // the lock went while an app's stop (a run recorded interrupted) still wrote in the root.
  it("with http.drainSeconds 0, an app's stop still writing ends before the lock goes", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const writer = writingStop(join(dir, "data", "_instance", "instance.lock"));
    const instance = await startTestAtrium({ dir, drainSeconds: 0, apps: [...PLATFORM_APPS, writer.app] });
    await instance.atrium.close();
    await writer.stopped();
    expect(writer.lockHeldAtEnd()).toBe(true);
  });

  it("a second signal stops waiting for them at once", async ({ onTestFinished }) => {
    const { lines, atrium } = await startHanging(onTestFinished);
    const closing = atrium.close();
    await settle();
    // The fake clock never moves: only the second call can end the wait.
    await atrium.close();
    await closing;
    expect(lines.find((line) => /left background work running/.test(String(line.msg)))).toMatchObject({
      jobs: ["probe a hung remote"],
    });
  });
});

describe("SIGTERM stops the server gracefully", SLOW, () => {
  it("an upload still sending when SIGTERM arrives completes with its real answer; new connections are refused; exit 0, no lock", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const { cli, url, workspaceId } = await serve(dir, 30, onTestFinished);
    const upload = startUpload(url, workspaceId);
    await until("the server is storing the upload", () => uploadStaged(dir, workspaceId));

    cli.kill("SIGTERM");
    await cli.waitForOutput(/"msg":"shutdown started"/, BOOT_MS);
    expect(logEntries(cli.stdout(), /^shutdown started$/)[0]).toMatchObject({
      inFlight: 1,
      drainSeconds: 30,
    });
    expect(await refused(url)).toBe(true);

    upload.finish();
    const answer = await upload.response;
    expect(answer.status).toBe(201);
    expect(answer.headers.connection).toBe("close");
    const meta = JSON.parse(answer.body) as { id: string; size: number };
    expect(meta.size).toBe("first part;second part".length);

    const exit = await cli.exited;
    expect(exit.code).toBe(0);
    expect(logEntries(exit.stdout, /^shutdown finished$/)[0]).toMatchObject({
      inFlight: 1,
      finished: 1,
      forced: 0,
    });
    expect(existsSync(join(dir, "data", "_instance", "instance.lock"))).toBe(false);
    const stored = join(dir, "data", workspaceId, "files", DEV_PRINCIPAL.id, meta.id);
    expect(await readFile(join(stored, "content"), "utf8").catch(() => undefined)).toBe(
      "first part;second part",
    );
  });

  it("a second SIGTERM cuts off what is still in flight at once, and the process still exits 0", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    // A drain this long never ends on its own within the test: only the second signal can end it.
    const { cli, url, workspaceId } = await serve(dir, 600, onTestFinished);
    const upload = startUpload(url, workspaceId);
    upload.response.catch(() => undefined);
    await until("the server is storing the upload", () => uploadStaged(dir, workspaceId));

    cli.kill("SIGTERM");
    await cli.waitForOutput(/"msg":"shutdown started"/, BOOT_MS);
    // One within a second of the first is the same request (ADR 0094): asked until one counts.
    await until("a signal counts as asked again", () => {
      cli.kill("SIGTERM");
      return /asked again to stop/.test(cli.stdout());
    });
    const exit = await cli.exited;
    expect(exit.code).toBe(0);
    expect(logEntries(exit.stdout, /^shutdown finished$/)[0]).toMatchObject({
      inFlight: 1,
      finished: 0,
      forced: 1,
    });
    await expect(upload.response).rejects.toThrow();
    expect(existsSync(join(dir, "data", "_instance", "instance.lock"))).toBe(false);
  });

  it("the drain deadline (http.drainSeconds) cuts off a request that does not finish", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const { cli, url, workspaceId } = await serve(dir, 1, onTestFinished);
    const upload = startUpload(url, workspaceId);
    upload.response.catch(() => undefined);
    await until("the server is storing the upload", () => uploadStaged(dir, workspaceId));
    cli.kill("SIGTERM");
    const exit = await cli.exited;
    expect(exit.code).toBe(0);
    expect(logEntries(exit.stdout, /^shutdown finished$/)[0]).toMatchObject({ inFlight: 1, forced: 1 });
    // The request cut off still gets its line (one per request), and its staging folder is gone
    // before the exit, not left for the next boot.
    const cutOff = logEntries(exit.stdout, /^request$/).filter((line) => line.method === "POST");
    expect(cutOff).toEqual([expect.objectContaining({ status: 499, workspace: workspaceId })]);
    expect(await uploadStaged(dir, workspaceId)).toBe(false);
  });
});

describe("no orphan", SLOW, () => {
  it("SIGTERM to the npm process of `npm start` stops the node server and closes its port", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const data = join(dir, "data");
    // --ignore-scripts: `npm start` runs its script, never `prestart` (which may run `npm ci`).
    const npm = spawnCaptured(
      "npm",
      ["start", "--ignore-scripts", "--", "--port", "0", "--data", data],
      WORKTREE,
      {
        npm_config_update_notifier: "false",
      },
    );
    let serverPid: number | undefined;
    onTestFinished(async () => {
      // An orphan holds npm's stdout open, so npm's streams close only once it is gone.
      if (serverPid !== undefined && isAlive(serverPid)) process.kill(serverPid, "SIGKILL");
      await npm.stop();
    });
    const [, url] = await npm.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/, BOOT_MS);
    const holder = JSON.parse(await readFile(join(data, "_instance", "instance.lock"), "utf8")) as LockHolder;
    serverPid = holder.pid;
    expect(serverPid).not.toBe(npm.pid);

    npm.kill("SIGTERM");
    const pid = serverPid;
    await until("the node server is gone", () => !isAlive(pid));
    expect(await refused(url ?? "")).toBe(true);
    expect(existsSync(join(data, "_instance", "instance.lock"))).toBe(false);
  });

  it("`npx atrium serve` stops once its npm is killed outright, through the shell npx puts between them", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const instance = await writeCliInstance(dir);
    // npx runs `sh -c 'atrium serve …'`: the server's parent is that shell, not npm.
    const npx = spawnCaptured("npx", ["--no-install", "atrium", "serve", "--instance", instance], WORKTREE, {
      npm_config_update_notifier: "false",
    });
    let serverPid: number | undefined;
    onTestFinished(async () => {
      if (serverPid !== undefined && isAlive(serverPid)) process.kill(serverPid, "SIGKILL");
      await npx.stop();
    });
    const [, url] = await npx.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/, BOOT_MS);
    const lock = join(dir, "data", "_instance", "instance.lock");
    serverPid = (JSON.parse(await readFile(lock, "utf8")) as LockHolder).pid;
    expect(serverPid).not.toBe(npx.pid);

    // SIGKILL, as the OOM killer or a supervisor's escalation sends it: npm forwards nothing.
    npx.kill("SIGKILL");
    const pid = serverPid;
    await until("the node server is gone", () => !isAlive(pid));
    expect(await refused(url ?? "")).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
