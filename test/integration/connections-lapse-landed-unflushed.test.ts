import { rm } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// A credential lapse whose credential.json lands and whose folder's flush then fails is done
// (ADR 0166): the revalidator goes on to tell the gate (Connections' lapsed set) and post the
// notice. When the throw came through, every later pass found the lapse on disk and returned
// early, so calls kept going to the server with the dead credential until a restart.

const SECRET = "s3cret-rv54";
const CREDENTIAL_MS = 60_000;
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
let instance: TestAtrium;
let remote: RemoteServer;
let ws: string;

beforeAll(async () => {
  instance = await startConnectionsAtrium("atrium-rv54-lapse-", time, captured.log, {
    healthIntervalSeconds: 5,
    credentialCheckIntervalSeconds: CREDENTIAL_MS / 1000,
    toolListMaxAgeSeconds: 2,
  });
  ws = await bootstrapWorkspace(instance, "alice");
  remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
});
afterAll(async () => {
  await instance?.stop();
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

it("a lapse whose credential.json lands but whose flush fails still refuses calls as lapsed", async () => {
  const created = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "keyed",
    url: remote.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
  });
  expect(created.status).toBe(201);
  const call = async () => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "keyed__echo",
      arguments: { text: "x" },
    });
    return (await response.json()) as { isError?: boolean; content?: { text: string }[] };
  };
  expect((await call()).isError).toBeFalsy();
  await remote.control({ reject401: true });
  await journalDuring(
    async () => {
      await time.advance(CREDENTIAL_MS);
      await eventually(
        async () => {
          const view = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/keyed`);
          expect(((await view.json()) as { state: string }).state).toBe("reauth_required");
        },
        { timeout: 10_000 },
      );
    },
    { sync: (path) => (path.endsWith("/keyed") ? eio() : undefined) },
  );
  // The disk says lapsed (the view above); another pass of the check changes nothing.
  await time.advance(CREDENTIAL_MS);
  const refused = await call();
  expect(refused.content?.[0]?.text).toContain("has lapsed");
}, 60_000);
