import { existsSync } from "node:fs";
import { access, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { startAtrium } from "../../src/server.ts";
import { bootstrapWorkspace, startTestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { gate } from "../helpers/gate.ts";
import { writingStop } from "../helpers/writing-stop.ts";

// A boot that failed after its apps had started (a port taken) stopped them and let go of the
// root at once: it waited neither for what the apps' stops announced (another app's write an
// event started), nor for what the apps wait for once no request is left (their `drained`,
// which it never asked). So a write could land after the lock was released, in a root a next
// process may own. The close of a failed boot now ends them in the graceful stop's order before
// the lock goes (ADR 0093).

type OnFinished = TestContext["onTestFinished"];

async function tempDir(onFinished: OnFinished): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-boot-failed-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A loopback port held by another listener until the test ends: a boot on it fails to listen. */
async function holdPort(onFinished: OnFinished): Promise<number> {
  const blocker: Server = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  onFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  return (blocker.address() as { port: number }).port;
}

/**
 * A boot on `dir/data` that fails to listen on the held `port`, after its apps started. Its drain
 * deadline is far past what the test's work takes unless given: the close is not cut short by it.
 */
function failingBoot(dir: string, port: number, app: PlatformApp, drainSeconds = 600): Promise<unknown> {
  const config = parseInstance(
    {
      auth: { adapter: "dev" },
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port, publicUrl: "http://127.0.0.1:8787", drainSeconds },
    },
    { source: "test", baseDir: dir },
  );
  return startAtrium(config, { log: createLogger("silent"), apps: [...PLATFORM_APPS, app] });
}

/**
 * Resolves once `file` is gone, or after `patience` looks at it: the flushes it holds then go on
 * whether or not the close let go of the lock, so a close that waits for them is not held for ever.
 */
async function goneOrAfter(file: string, patience: number): Promise<void> {
  for (let look = 0; look < patience; look++) {
    try {
      await access(file);
    } catch {
      return;
    }
  }
}

describe("a boot that fails after its apps started", () => {
  it("writes what an app's stop announced before it lets go of the root", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const first = await startTestAtrium({ dir });
    const ws = await bootstrapWorkspace(first, "alice");
    await first.close();

    // Its stop announces, as the tasks app's does for a run it records interrupted; the
    // notifications app, whose own stop has returned, posts the notice.
    const posted = gate();
    const announcer: PlatformApp = {
      name: "announcer",
      start: ({ events }) => {
        events.subscribe({ types: ["notification.created"] }, () => posted.open());
        return {
          tools: new AppTools("announcer"),
          stop: async () =>
            events.publish({
              type: "member.deactivated",
              workspaceId: ws,
              principalId: "usr_bob",
              name: "Bob",
            }),
        };
      },
    };
    const lock = join(dir, "data", "_instance", "instance.lock");
    const entries = join(dir, "data", ws, "notifications", "entries");
    // The notice's flushes wait until the lock is gone (or a while): one the close did not wait
    // for then lands after the root was let go, every time.
    let held: Promise<void> | undefined;
    const flushedAfterRelease: string[] = [];
    let atRejection: string[] = [];
    await journalDuring(
      async () => {
        await expect(failingBoot(dir, await holdPort(onTestFinished), announcer)).rejects.toThrow(
          "that port is taken",
        );
        atRejection = await readdir(entries).catch(() => []);
        // Posted in this process either way: waited for with the flushes still watched.
        await posted.promise;
      },
      {
        sync: async (path) => {
          if (!path.includes(`${sep}notifications${sep}`)) return undefined;
          held ??= goneOrAfter(lock, 2000);
          await held;
          if (!existsSync(lock)) flushedAfterRelease.push(path);
          return undefined;
        },
      },
    );

    expect(flushedAfterRelease).toEqual([]);
    expect(atRejection.filter((name) => name.endsWith(".json"))).toHaveLength(1);
  });

  // ADR 0093 (amended): drainSeconds 0 (a valid setting) made the close wait for nothing, and the
  // lock went while an app's stop (a run recorded interrupted) still wrote in the root. A failed
  // boot has no request to drain; its apps' stops are waited for whatever the drain says.
  it("with http.drainSeconds 0, lets go of the root only once the apps' stops have ended", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const writer = writingStop(join(dir, "data", "_instance", "instance.lock"));

    await expect(failingBoot(dir, await holdPort(onTestFinished), writer.app, 0)).rejects.toThrow(
      "that port is taken",
    );
    await writer.stopped();

    expect(writer.lockHeldAtEnd()).toBe(true);
  });

  it("asks the apps' drained(), whose signal aborts before the lock goes", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const lock = join(dir, "data", "_instance", "instance.lock");
    const seen: string[] = [];
    const waiter: PlatformApp = {
      name: "waiter",
      start: () => ({
        tools: new AppTools("waiter"),
        drained: async (letGo) => {
          seen.push(`drained, let go: ${letGo.aborted}`);
          letGo.addEventListener("abort", () => seen.push(`let go, lock held: ${existsSync(lock)}`));
        },
      }),
    };

    await expect(failingBoot(dir, await holdPort(onTestFinished), waiter)).rejects.toThrow(
      "that port is taken",
    );

    expect(seen).toEqual(["drained, let go: false", "let go, lock held: true"]);
    expect(existsSync(lock)).toBe(false);
  });
});
