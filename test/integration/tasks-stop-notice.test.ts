import { access, readdir, readFile } from "node:fs/promises";
import { join, sep } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import type { Notification } from "../../src/platform/notifications/model.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import type { Run, Task } from "../../src/platform/tasks/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A graceful stop ran the apps' stops side by side. The tasks app's recorded a run in flight as
// `interrupted` and announced it; the notifications app, whose stop had already found no post in
// flight, then began the run's entry, and nothing waited for it: it was written after close()
// resolved and the instance lock was gone (a test's cleanup met ENOTEMPTY removing the root).
// Now the stop waits for what the apps' last events started before it lets go of the root.

let hanging = 0;

/** A tool that answers only once its call is cancelled: a run of it is in flight at the stop. */
const probeApp: PlatformApp = {
  name: "probe",
  start() {
    const tools = new AppTools("probe");
    tools.registerTool(
      "hang",
      {
        description: "Wait until cancelled.",
        inputSchema: platformInput({}),
        annotations: { readOnlyHint: true },
      },
      async (_caller, _args, call) => {
        hanging++;
        await new Promise<void>((resolve) =>
          call.signal?.addEventListener("abort", () => resolve(), { once: true }),
        );
        return { content: [{ type: "text", text: "stopped" }] };
      },
    );
    return { tools };
  },
};

let instance: TestAtrium | undefined;

afterEach(async () => {
  await instance?.stop();
  instance = undefined;
});

/**
 * Resolves once `file` is gone, or after `patience` looks at it: the flushes it holds then go on
 * whether or not the stop let go of its lock, so a stop that waits for them is not held for ever.
 */
async function goneOrAfter(file: string, patience: number): Promise<undefined> {
  for (let look = 0; look < patience; look++) {
    try {
      await access(file);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

describe("a graceful stop with a task run in flight", () => {
  it("writes the run's interrupted notification before close() resolves, not after the root is let go", async () => {
    instance = await startTestAtrium({ apps: [...PLATFORM_APPS, probeApp] });
    const ws = await bootstrapWorkspace(instance, "alice");
    const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
      name: "long",
      action: { tool: "probe__hang", arguments: {} },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const task = (await created.json()) as Task;
    const before = hanging;
    const started = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tasks/${task.id}/runs`, {});
    expect(started.status).toBe(201);
    const run = (await started.json()) as Run;
    await vi.waitFor(() => expect(hanging).toBe(before + 1));

    // The notification's flushes wait until the lock is gone (or a while): one the stop did not
    // wait for then lands after close() resolved, every time.
    const lock = join(instance.root, "_instance", "instance.lock");
    let held: Promise<undefined> | undefined;
    const entries = join(instance.root, ws, "notifications", "entries");
    let atClose: string[] = [];
    const stopping = instance;
    await journalDuring(
      async () => {
        await stopping.close();
        atClose = await readdir(entries).catch(() => []);
      },
      {
        sync: (path) => {
          if (!path.includes(`${sep}notifications${sep}`)) return undefined;
          held ??= goneOrAfter(lock, 2000);
          return held;
        },
      },
    );

    expect(atClose).toHaveLength(1);
    const entry = JSON.parse(await readFile(join(entries, atClose[0] ?? ""), "utf8")) as Notification;
    expect(entry).toMatchObject({
      title: 'Task "long" run interrupted',
      data: { taskId: task.id, runId: run.id },
    });
  });
});
