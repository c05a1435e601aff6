import { rm } from "node:fs/promises";
import { expect } from "vitest";
import type { Logger } from "../../src/log.ts";
import { startTestAtrium, type TestAtrium } from "./atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "./credential-key.ts";
import type { FakeTime } from "./fake-time.ts";

/**
 * The Atrium the connection tests share: on a keyed temp dir (so connections can seal what they
 * are given), on `time`'s clock and timers, logging to `log`, allowed to reach servers on
 * 127.0.0.1, with any other `connections` settings laid over that. The caller removes
 * `instance.dir` when done.
 */
export async function startConnectionsAtrium(
  prefix: string,
  time: FakeTime,
  log: Logger,
  connections: Record<string, unknown> = {},
  /** Other sections of instance.json (e.g. `storage` with a retention). */
  sections: Record<string, unknown> = {},
): Promise<TestAtrium> {
  const dir = await keyedDir(prefix);
  try {
    return await startTestAtrium({
      dir,
      clock: time.clock,
      timers: time.timers,
      log,
      sections: {
        credentials: CREDENTIALS_SECTION,
        connections: { allowPrivateAddresses: true, ...connections },
        ...sections,
      },
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * A new workspace of alice's named `name`, with a connection `gh` to `url` under a static
 * credential and a daily task: what an archive keeps outside its folder (a sealed credential, a
 * schedule entry), for the tests of archive removal.
 */
export async function workspaceWithConnectionAndTask(
  atrium: TestAtrium,
  url: string,
  secret: string,
  name: string,
): Promise<string> {
  const created = await atrium.rest("alice", "POST", "/v1/workspaces", { name });
  const ws = ((await created.json()) as { id: string }).id;
  const added = await atrium.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "gh",
    url,
    auth: { kind: "static", header: "x-api-key", value: secret },
  });
  expect(added.status).toBe(201);
  const task = await atrium.rest("alice", "POST", `/v1/workspaces/${ws}/tasks`, {
    name: "daily listing",
    action: { tool: "files__list", arguments: {} },
    trigger: { everySeconds: 86_400 },
  });
  expect(task.status).toBe(201);
  return ws;
}
