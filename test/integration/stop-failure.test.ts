import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stopOnRequest } from "../../src/cli.ts";
import { systemClock } from "../../src/kernel/clock.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import type { Source } from "../../src/sources/source.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium } from "../helpers/atrium.ts";
import { gate } from "../helpers/gate.ts";

// ADR 0093 (amended): an app's stop that failed made close() reject at once, before the sources
// closed and the lock was released, so the next `atrium serve` on the root waited for the lock to
// go stale. And a stop failing while requests still drained had no handler until the drain
// ended: an unhandled rejection, which ends a Node 20 process before the lock goes or the log is
// flushed. Now the failure is logged as it comes, the rest still ends, the lock goes, and the
// stop still fails (exit 1).

/** An app whose `stop` or `drained` fails; its tool holds a request open until released. */
function faultyApp(fails: "stop" | "drained", lockFile: string, seen: string[]) {
  const holding = gate();
  const released = gate();
  const failing = gate();
  // The workspace's own source of the app: the stop closes it before it lets go of the root.
  const witness: Source = {
    name: "witness",
    listTools: async () => [],
    callTool: async () => ({ content: [], isError: true }),
    close: async () => void seen.push(`witness closed, lock held: ${existsSync(lockFile)}`),
  };
  const fail = async () => {
    failing.open();
    throw new Error(`faulty ${fails} failed`);
  };
  const app: PlatformApp = {
    name: "faulty",
    start() {
      const tools = new AppTools("faulty");
      tools.registerTool(
        "hold",
        {
          description: "Answer once the test releases it.",
          inputSchema: platformInput({}),
          annotations: { readOnlyHint: true },
        },
        async () => {
          holding.open();
          await released.promise;
          return { content: [{ type: "text", text: "released" }] };
        },
      );
      return {
        tools,
        sources: async () => [witness],
        ...(fails === "stop" ? { stop: fail } : { drained: fail }),
      };
    },
  };
  return { app, holding, released, failing };
}

describe("a graceful stop with a part that fails", () => {
  it.for(["stop", "drained"] as const)(
    "an app's %s that fails is logged, the rest ends, the lock goes, the stop exits 1, and nothing is left unhandled",
    async (fails, { onTestFinished }) => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      onTestFinished(() => void process.off("unhandledRejection", onUnhandled));
      const { log, lines } = capturingLogger();
      const seen: string[] = [];
      const dir = await mkdtemp(join(tmpdir(), "atrium-stop-failure-"));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const lock = join(dir, "data", "_instance", "instance.lock");
      const faulty = faultyApp(fails, lock, seen);
      const instance = await startTestAtrium({ dir, apps: [...PLATFORM_APPS, faulty.app], log });
      const ws = await bootstrapWorkspace(instance, "alice");
      const client = await instance.mcpClient("alice", ws);
      onTestFinished(() => client.close().catch(() => undefined));
      const call = client.callTool({ name: "faulty__hold", arguments: {} });
      await faulty.holding.promise;

      let exited: (code: number) => void = () => undefined;
      const exitCode = new Promise<number>((resolve) => {
        exited = resolve;
      });
      stopOnRequest(instance.atrium, { log, clock: systemClock, exit: exited })("SIGTERM");
      if (fails === "stop") {
        await faulty.failing.promise;
        // Node reports a rejection nobody handles once the microtasks run out; the request still drains.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
      }
      faulty.released.open();
      await call;

      expect(await exitCode).toBe(1);
      // Before anything else: with Node 20's defaults it ends the process before the lock goes.
      expect(unhandled).toEqual([]);
      expect(existsSync(lock)).toBe(false);
      expect(seen).toEqual(["witness closed, lock held: true"]);
      expect(lines).toContainEqual(
        expect.objectContaining({
          msg: "a part of the shutdown failed; the rest still ends",
          part: `faulty ${fails}`,
          err: expect.objectContaining({ message: `faulty ${fails} failed` }),
        }),
      );
    },
  );
});
