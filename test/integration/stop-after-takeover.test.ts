import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { parseInstance } from "../../src/instance/load.ts";
import { startAtrium } from "../../src/server.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { ANOTHER_HOLDER } from "../helpers/lock-takeover.ts";
import { memoryLog } from "../helpers/memory-log.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

// ADR 0137 (amended) / ADR 0146: once the lock is not this process's, it writes nothing more in
// the root: a stop set off by losing the lock (another process took the root over) writes none of
// the client uses kept in memory there, though it writes them at a stop of its own.
it("a stop set off by a lock takeover writes no client record in the new holder's root", async ({
  onTestFinished,
}) => {
  const dir = await mkdtemp(join(tmpdir(), "atrium-stop-takeover-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const config = parseInstance(
    {
      auth: { adapter: "dev" },
      storage: { root: "./data" },
      http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
    },
    { source: "test", baseDir: dir },
  );
  const time = new FakeTime();
  const { log, lines } = memoryLog();
  const atrium = await startAtrium(config, {
    log,
    lockHeartbeatMs: 20,
    clock: time.clock,
    timers: time.timers,
  });
  onTestFinished(() => atrium.close());
  const registered = await fetch(`${atrium.url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "c",
      redirect_uris: ["http://127.0.0.1:9/cb"],
      token_endpoint_auth_method: "none",
    }),
  });
  expect(registered.status).toBe(201);
  const id = ((await registered.json()) as { client_id: string }).client_id;
  const folder = join(dir, "data", "_instance", "oauth", "clients");
  const before = await readFile(join(folder, `${id}.json`), "utf8");
  time.jump(2 * DAY_MS);
  await journalDuring(() => atrium.oauth.clients.recordUse(id), {
    sync: (path) =>
      path.startsWith(`${folder}/`) ? Object.assign(new Error("EIO"), { code: "EIO" }) : undefined,
  });

  // Another process takes the root over; the heartbeat notices and stops this one.
  await writeFile(join(dir, "data", "_instance", "instance.lock"), JSON.stringify(ANOTHER_HOLDER));
  await eventually(() => expect(lines.some((line) => line.msg === "shutdown finished")).toBe(true));

  // The root is the new holder's: this process must not have written the client record there.
  expect(await readFile(join(folder, `${id}.json`), "utf8")).toBe(before);
});
