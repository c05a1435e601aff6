import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A disable writes the connection's record (connection.json renamed into place, then its folder
// flushed). When the flush failed after the rename, the store kept the enabled record: the admin
// was answered 500, the connection was served on, and the next write based on the kept record put
// `disabled: false` back on disk. An overwrite that lands is held as landed, and done (ADR 0166).

const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
let remote: RemoteServer;
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
  instance = await startConnectionsAtrium("atrium-connections-unflushed-", time, captured.log);
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

describe("a disable whose record lands but whose folder's flush fails", () => {
  it("is 200, and the connection is disabled before and after a restart", async () => {
    const path = `/v1/workspaces/${ws}/connections/notes`;
    const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "notes",
      url: remote.url.href,
      auth: { kind: "static", header: "x-api-key", value: SECRET },
    });
    expect(created.status).toBe(201);
    const folder = join(instance.root, ws, "connections", "servers", "notes");

    let status: number | undefined;
    await journalDuring(
      async () => {
        status = (await instance.rest("alice", "POST", `${path}/disable`)).status;
      },
      { sync: (synced) => (synced === folder ? eio() : undefined) },
    );
    expect(status).toBe(200);
    expect(await (await instance.rest("alice", "GET", path)).json()).toMatchObject({ state: "disabled" });

    instance = await instance.restart();
    expect(await (await instance.rest("alice", "GET", path)).json()).toMatchObject({ state: "disabled" });
  }, 60_000);
});
