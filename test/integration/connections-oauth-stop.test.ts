import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";
import {
  authorizeByHand,
  deliverByHand,
  openGoUrl,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// Every request an OAuth connection's sign-in sends its authorization server — an add's discovery
// and client registration, a sign-in started again, the callback's token exchange, a credential
// refresh — is a look that a graceful stop ends (adr/0122, amended): the stop does not wait on a
// server that holds the request, the step answers 409 `stopping`, and nothing of it is stored.
// The authorization server is real, on 127.0.0.1, and holds the one request a test names until
// the test lets it go, which it does only after the step answered. The request timeout is the
// longest allowed: a step the stop does not cut is ended only by the drain deadline, which cuts
// its caller off unanswered.

const PERSONAL = [
  ["a workspace connection", false],
  ["a member's personal connection", true],
] as const;

let scripted: ScriptedOAuthServer;

beforeAll(async () => {
  scripted = await startScriptedOAuthServer();
});

afterEach(() => {
  scripted.beforeRequest = undefined;
  scripted.expiresIn = 3600;
});

afterAll(async () => {
  await scripted?.close();
});

function start(time = new FakeTime(Date.now())): Promise<TestAtrium> {
  return startConnectionsAtrium("atrium-connections-oauth-stop-", time, capturingLogger().log, {
    requestTimeoutSeconds: 300,
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 3600,
  });
}

/**
 * Holds the next request to `path` at the authorization server until the step that sent it has
 * answered, the stop begun while it was held: what happened, in order. Atrium hanging up on the
 * held request is waited for before it is let go.
 */
async function stopWhileHeld(
  instance: TestAtrium,
  path: string,
  send: () => Promise<{ status: number }>,
): Promise<string[]> {
  const [held, release, hungUp] = [gate(), gate(), gate()];
  const events: string[] = [];
  let holding = false;
  scripted.beforeRequest = async (asked, signal) => {
    if (asked !== path || holding) return;
    holding = true;
    signal.addEventListener("abort", () => hungUp.open(), { once: true });
    events.push(`${path} held`);
    held.open();
    await release.promise;
  };
  try {
    const answered = send().then(({ status }) => void events.push(`answered ${status}`));
    await held.promise;
    const closing = instance.atrium.close();
    await answered;
    await hungUp.promise;
    await closing;
    events.push(`${path} let go`);
    return events;
  } finally {
    release.open();
  }
}

async function connectionsOf(instance: TestAtrium, workspaceId: string) {
  const listed = await instance.rest("alice", "GET", `/v1/workspaces/${workspaceId}/connections`);
  return ((await listed.json()) as { connections: { name: string; state: string }[] }).connections;
}

async function add(instance: TestAtrium, workspaceId: string, personal: boolean) {
  return instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/connections`, {
    name: "held",
    url: scripted.url,
    auth: { kind: "oauth", scopes: ["read"] },
    ...(personal ? { personal: true } : {}),
  });
}

describe("a graceful stop while an OAuth add's client registration is held", () => {
  it.each(PERSONAL)(
    "%s: the add answers 409 stopping before the server lets go, and no connection or registration is stored",
    async (_, personal) => {
      let instance = await start();
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        let added: Response | undefined;
        const events = await stopWhileHeld(instance, "/register", async () => {
          added = await add(instance, workspaceId, personal);
          return added;
        });
        expect(events).toEqual(["/register held", "answered 409", "/register let go"]);
        // The stop's answer, not the registration's failure (a 400 refusal by the server).
        expect(await added?.json()).toMatchObject({ error: { code: "stopping" } });
        instance = await instance.restart();
        expect(await connectionsOf(instance, workspaceId)).toEqual([]);
        const registrations = join(instance.root, "_instance", "connections", "registrations");
        expect(await readdir(registrations).catch(() => [])).toEqual([]);
      } finally {
        await instance.stop();
      }
    },
  );
});

describe("a graceful stop while a sign-in started again waits on the server's discovery", () => {
  it.each(PERSONAL)(
    "%s: the start answers 409 stopping before the server lets go, and the connection stays pending",
    async (_, personal) => {
      let instance = await start();
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        expect((await add(instance, workspaceId, personal)).status).toBe(201);
        const source = personal ? "my_held" : "held";
        let started: Response | undefined;
        const events = await stopWhileHeld(
          instance,
          "/.well-known/oauth-protected-resource/mcp",
          async () => {
            started = await instance.rest(
              "alice",
              "POST",
              `/v1/workspaces/${workspaceId}/connections/${source}/oauth/start`,
            );
            return started;
          },
        );
        expect(events).toEqual([
          "/.well-known/oauth-protected-resource/mcp held",
          "answered 409",
          "/.well-known/oauth-protected-resource/mcp let go",
        ]);
        expect(await started?.json()).toMatchObject({ error: { code: "stopping" } });
        instance = await instance.restart();
        expect(await connectionsOf(instance, workspaceId)).toMatchObject([
          { name: source, state: "pending_auth" },
        ]);
      } finally {
        await instance.stop();
      }
    },
  );
});

describe("a graceful stop while the callback's token exchange is held", () => {
  it.each(PERSONAL)(
    "%s: the callback answers 409 stopping before the server lets go, and nothing is activated",
    async (_, personal) => {
      let instance = await start();
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        const added = await add(instance, workspaceId, personal);
        const { go_url } = (await added.json()) as { go_url: string };
        const { location, cookie } = await openGoUrl(instance, "alice", go_url);
        const atServer = await fetch(location, { redirect: "manual" });
        const back = new URL(String(atServer.headers.get("location")));
        let landed = "";
        const events = await stopWhileHeld(instance, "/token", async () => {
          const landing = await deliverByHand(instance, "alice", cookie, back);
          landed = landing.text;
          return landing;
        });
        expect(events).toEqual(["/token held", "answered 409", "/token let go"]);
        expect(landed).toContain("stopping");
        instance = await instance.restart();
        expect(await connectionsOf(instance, workspaceId)).toMatchObject([
          { name: personal ? "my_held" : "held", state: "pending_auth" },
        ]);
      } finally {
        await instance.stop();
      }
    },
  );
});

describe("a graceful stop while a credential refresh waits on the authorization server", () => {
  it.each([
    ["its discovery", "/.well-known/oauth-protected-resource/mcp"],
    ["its token request", "/token"],
  ])(
    "%s is cut: the refresh answers 409 stopping before the server lets go, and the credential is not lapsed",
    async (_, path) => {
      const time = new FakeTime(Date.now());
      let instance = await start(time);
      scripted.expiresIn = 60;
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        const added = await add(instance, workspaceId, false);
        const { go_url } = (await added.json()) as { go_url: string };
        expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
        // The access token has expired: the next photograph refreshes it first, discovering the
        // authorization server again (this process found it for the add, not for the connection).
        time.jump(120_000);
        const events = await stopWhileHeld(instance, path, () =>
          instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/connections/held/tools/refresh`),
        );
        expect(events).toEqual([`${path} held`, "answered 409", `${path} let go`]);
        instance = await instance.restart();
        expect(await connectionsOf(instance, workspaceId)).toMatchObject([
          { name: "held", state: "running" },
        ]);
      } finally {
        await instance.stop();
      }
    },
  );
});
