import { existsSync, writeFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it, type TestContext } from "vitest";
import { parseInstance } from "../../src/instance/load.ts";
import { InstanceLockLostWhileBooting, type LockHolder } from "../../src/instance/lock.ts";
import { createLogger } from "../../src/log.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { type RunningAtrium, startAtrium } from "../../src/server.ts";
import { type CliProcess, logEntries, spawnAtriumCli, writeCliInstance } from "../helpers/cli.ts";
import { eventually } from "../helpers/eventually.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { gate } from "../helpers/gate.ts";
import { memoryLog } from "../helpers/memory-log.ts";

// Issue 16: one data root, one running Atrium. Real processes, because the lock is about them.

// Each test boots two real processes through tsx: many seconds each on a loaded machine.
const BOOT_MS = 90_000;
type OnFinished = TestContext["onTestFinished"];

async function setup(onFinished: OnFinished): Promise<{ dir: string; instance: string; lockPath: string }> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-lock-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  const instance = await writeCliInstance(dir);
  return { dir, instance, lockPath: join(dir, "data", "_instance", "instance.lock") };
}

function serve(instance: string, dir: string, onFinished: OnFinished): CliProcess {
  const cli = spawnAtriumCli(["serve", "--instance", instance], dir);
  onFinished(async () => {
    await cli.stop();
  });
  return cli;
}

async function listening(cli: CliProcess): Promise<string> {
  const [, url] = await cli.waitForOutput(/listening on (http:\/\/127\.0\.0\.1:\d+)/, BOOT_MS);
  return url ?? "";
}

describe("one data root, one running process", { timeout: 300_000 }, () => {
  it("a second process on the root exits non-zero naming the holder, and the first keeps serving", async ({
    onTestFinished,
  }) => {
    const { dir, instance, lockPath } = await setup(onTestFinished);
    const first = serve(instance, dir, onTestFinished);
    const url = await listening(first);
    const holder = JSON.parse(await readFile(lockPath, "utf8")) as LockHolder;
    expect(holder).toMatchObject({ pid: first.pid, host: hostname(), publicUrl: url });

    const second = await serve(instance, dir, onTestFinished).exited;
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(join(dir, "data"));
    expect(second.stderr).toContain(
      `process ${first.pid} on host ${hostname()}, started ${holder.startedAt}`,
    );
    expect(second.stderr).toMatch(/Stop that process first, or start this one with another --data DIR/);
    expect(second.stdout).not.toMatch(/listening/);

    expect((await fetch(`${url}/v1/health`)).status).toBe(200);
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(holder);

    // A graceful stop leaves no lock behind.
    expect((await first.stop()).code).toBe(0);
    expect(existsSync(lockPath)).toBe(false);
  });

  it("after the holder is killed with SIGKILL, a new process takes the root over and logs it", async ({
    onTestFinished,
  }) => {
    const { dir, instance, lockPath } = await setup(onTestFinished);
    const first = serve(instance, dir, onTestFinished);
    await listening(first);
    first.kill("SIGKILL");
    await first.exited;
    expect(existsSync(lockPath)).toBe(true);

    const second = serve(instance, dir, onTestFinished);
    const url = await listening(second);
    expect((await fetch(`${url}/v1/health`)).status).toBe(200);
    const [takeover] = logEntries(second.stdout(), /taking over a stale instance lock/);
    expect(takeover).toMatchObject({ reason: "its process is gone", previous: { pid: first.pid } });
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toMatchObject({ pid: second.pid });
  });

  it("two processes started at once on a fresh root: exactly one runs, with one signing key and one session secret", async ({
    onTestFinished,
  }) => {
    const { dir, instance } = await setup(onTestFinished);
    const racers = [serve(instance, dir, onTestFinished), serve(instance, dir, onTestFinished)];
    // Whichever happens first for each: it serves, or it exits. No timeout decides it.
    const outcomes = await Promise.all(
      racers.map((cli) =>
        Promise.race([
          cli.waitForOutput(/listening on/, 300_000).then(
            () => "running",
            () => "exited",
          ),
          cli.exited.then(() => "exited"),
        ]),
      ),
    );
    // A copy: sorting `outcomes` itself would lose which racer lost.
    expect([...outcomes].sort()).toEqual(["exited", "running"]);
    const loser = racers[outcomes.indexOf("exited")] as CliProcess;
    const exit = await loser.exited;
    expect(exit.code).toBe(1);
    expect(exit.stderr).toMatch(/is in use by Atrium process \d+/);

    const instanceDir = join(dir, "data", "_instance");
    expect(
      (await readdir(join(instanceDir, "oauth", "keys"))).filter((n) => n.endsWith(".json")),
    ).toHaveLength(1);
    expect(
      (await readdir(instanceDir)).filter((n) => n.startsWith("session-secret") || n.startsWith(".tmp-")),
    ).toEqual(["session-secret"]);
  });
});

/** A dev instance on a free port with its root in `dir`/data. */
function devInstance(dir: string) {
  return parseInstance(
    {
      auth: { adapter: "dev" },
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
    },
    { source: "test", baseDir: dir },
  );
}

/** The lock as another process that took the root over writes it. */
const THEIRS = {
  pid: 1,
  host: "elsewhere.example",
  startedAt: "now",
  publicUrl: "http://x",
  token: "theirs",
};

describe("a process that loses its lock", () => {
  it("while booting, stops without listening and leaves the new holder's lock alone", async ({
    onTestFinished,
  }) => {
    const dir = await mkdtemp(join(tmpdir(), "atrium-lock-booting-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const config = devInstance(dir);
    const lockPath = join(dir, "data", "_instance", "instance.lock");
    // As if this process had been frozen (SIGSTOP) past the stale bound half-way through its boot,
    // and another had taken the root over before it woke: the boot goes on after the takeover.
    const takenOverWhileBooting: PlatformApp = {
      name: "frozen",
      start: () => ({
        tools: new AppTools("frozen"),
        ready: () => writeFile(lockPath, JSON.stringify(THEIRS)),
        stop: async () => {
          stopped = true;
        },
      }),
    };
    let stopped = false;
    const { log, lines } = memoryLog();
    const boot = startAtrium(config, { log, apps: [...PLATFORM_APPS, takenOverWhileBooting] });
    await expect(boot).rejects.toBeInstanceOf(InstanceLockLostWhileBooting);
    await expect(boot).rejects.toThrow(/stopped being this process's while it was starting/);
    expect(lines.filter((line) => line.msg === "atrium listening")).toEqual([]);
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(THEIRS);
    expect(stopped).toBe(true);
  });

  it("stops serving, and leaves the new holder's lock alone", async ({ onTestFinished }) => {
    const dir = await mkdtemp(join(tmpdir(), "atrium-lock-lost-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const config = devInstance(dir);
    const atrium = await startAtrium(config, { log: createLogger("silent"), lockHeartbeatMs: 20 });
    onTestFinished(() => atrium.close());
    expect((await fetch(`${atrium.url}/v1/health`)).status).toBe(200);

    // As if this process had been frozen past the stale bound and another had taken over.
    const lockPath = join(dir, "data", "_instance", "instance.lock");
    await writeFile(lockPath, JSON.stringify(THEIRS));

    const deadline = Date.now() + 20_000;
    while (
      await fetch(`${atrium.url}/v1/health`).then(
        () => true,
        () => false,
      )
    ) {
      if (Date.now() > deadline) throw new Error("the server kept serving after losing its lock");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await atrium.close();
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(THEIRS);
  });

  // ADR 0093 (amended): a part of the stop that fails makes close() reject. Set off by a lost lock
  // (`void running.close()`), that rejection was handled by nobody, which ends a Node process with
  // a stack trace, and a stop that ended left the process to end by itself; and a close after a
  // loss found just after listening reported the app's error instead of the lost lock. It ended
  // with 0 "because the new holder serves the root", also when the lock was removed and nobody
  // does: a supervisor restarting on failure left the root unserved (review).
  it.for([
    ["taken over", "ends"],
    ["taken over", "fails"],
    ["removed", "ends"],
  ] as const)(
    "stops serving once its lock is %s and ends the process with exit 1 once its stop %s, leaving nothing unhandled",
    async ([how, outcome], { onTestFinished }) => {
      const unhandled = watchUnhandled(onTestFinished);
      const dir = await mkdtemp(join(tmpdir(), "atrium-lock-lost-exit-"));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const { log, lines } = memoryLog();
      const codes: number[] = [];
      const atrium = await startAtrium(devInstance(dir), {
        log,
        lockHeartbeatMs: 20,
        apps: [...PLATFORM_APPS, ...(outcome === "fails" ? [faultyStop()] : [])],
        exit: (exitCode) => void codes.push(exitCode),
      });
      onTestFinished(() => atrium.close().catch(() => undefined));

      const lockPath = join(dir, "data", "_instance", "instance.lock");
      if (how === "removed") await rm(lockPath);
      else await writeFile(lockPath, JSON.stringify(THEIRS));

      await eventually(() => expect(codes).toEqual([1]));
      expect(unhandled).toEqual([]);
      expect(lines.filter((line) => line.msg === "shutdown failed")).toHaveLength(
        outcome === "fails" ? 1 : 0,
      );
      expect(existsSync(lockPath)).toBe(how === "taken over");
    },
  );

  it("just after listening, with a part of its close failing, reports the lost lock", async ({
    onTestFinished,
  }) => {
    const unhandled = watchUnhandled(onTestFinished);
    const dir = await mkdtemp(join(tmpdir(), "atrium-lock-lost-listening-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const lockPath = join(dir, "data", "_instance", "instance.lock");
    const lines: Record<string, unknown>[] = [];
    // As if this process had been frozen just after it listened, past the stale bound, and another
    // had taken the root over: after its look at the lock before listening, before the one after.
    const takenOverAsItListens = new Writable({
      write(chunk, _encoding, done) {
        for (const text of String(chunk).split("\n").filter(Boolean)) {
          const line = JSON.parse(text) as Record<string, unknown>;
          lines.push(line);
          if (line.msg === "atrium listening") writeFileSync(lockPath, JSON.stringify(THEIRS));
        }
        done();
      },
    });
    const boot = startAtrium(devInstance(dir), {
      log: createLogger("info", takenOverAsItListens),
      apps: [...PLATFORM_APPS, faultyStop()],
    });

    await expect(boot).rejects.toBeInstanceOf(InstanceLockLostWhileBooting);
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(THEIRS);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "a part of the shutdown failed; the rest still ends",
        part: "faulty stop",
      }),
    );
    expect(unhandled).toEqual([]);
  });
  // The check after listening read the heartbeat's finding before its own read of the lock: a
  // beat that found the takeover while that read was in flight turned itself off, the read (of the
  // bytes from before) said "held", and the process served beside the new holder with nothing left
  // to act on the loss (review).
  it("while the check after listening reads it, stops without serving", async ({ onTestFinished }) => {
    const dir = await mkdtemp(join(tmpdir(), "atrium-lock-lost-checking-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const lockPath = join(dir, "data", "_instance", "instance.lock");
    const { log, lines } = memoryLog();
    const checking = gate();
    const checked = gate();
    let takenOver = false;
    let boot: Promise<RunningAtrium> | undefined;
    await journalDuring(
      async () => {
        boot = startAtrium(devInstance(dir), { log, lockHeartbeatMs: 10 });
        let settled = false;
        boot.then(
          () => (settled = true),
          () => (settled = true),
        );
        await checking.promise;
        writeFileSync(lockPath, JSON.stringify(THEIRS));
        takenOver = true;
        // The read held first is the check's, and a beat after the takeover finds the loss; on a
        // loaded machine a beat can read between listening and the check instead, be the one
        // held, and leave the check to read the takeover itself and end the boot (its close
        // stops the beats). Either way the process must stop without serving, asserted below.
        const lossLine = "the instance lock is no longer this process's (taken over or removed); stopping";
        await eventually(() => expect(settled || lines.some((line) => line.msg === lossLine)).toBe(true));
        checked.open();
        await boot.catch(() => undefined);
      },
      {
        // Every read of the lock from listening to the takeover, held once read: the check's among
        // them, of the bytes from before; the beats' after it find the loss.
        read: (path) => {
          if (path !== lockPath || takenOver || !lines.some((line) => line.msg === "atrium listening")) {
            return undefined;
          }
          checking.open();
          return checked.promise;
        },
      },
    );
    const served = await boot?.then(
      (atrium) => {
        onTestFinished(() => atrium.close().catch(() => undefined));
        return atrium;
      },
      () => undefined,
    );
    expect(served).toBeUndefined();
    await expect(boot).rejects.toBeInstanceOf(InstanceLockLostWhileBooting);
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(THEIRS);
  });
});

/** An app whose stop fails, as a part of a stop may. */
function faultyStop(): PlatformApp {
  return {
    name: "faulty",
    start: () => ({
      tools: new AppTools("faulty"),
      stop: async () => {
        throw new Error("faulty stop failed");
      },
    }),
  };
}

/** The rejections nobody handles while the test runs: with Node's defaults each ends the process. */
function watchUnhandled(onFinished: OnFinished): unknown[] {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  onFinished(() => void process.off("unhandledRejection", onUnhandled));
  return unhandled;
}
