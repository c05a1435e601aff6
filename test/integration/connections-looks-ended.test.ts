import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";
import { type InterceptingProxy, startInterceptingProxy } from "../helpers/intercepting-proxy.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";
import {
  authorizeByHand,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// Atrium's looks at a connection's server outside Serving — a refresh, the first photograph after
// an authorization, a credential check — end when the instance stops or the connection is taken
// out of service, and record nothing (adr/0122, amended). Real servers on 127.0.0.1, held where a
// test wants them.

const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
const SERVER_OPTIONS = { requireHeader: { name: "x-api-key", value: SECRET } };
const CHECK_INTERVAL_SECONDS = 600;
const time = new FakeTime(Date.now());
let remote: RemoteServer;
let scripted: ScriptedOAuthServer;
let instance: TestAtrium;
let ws: string;
const proxies: InterceptingProxy[] = [];

async function proxy(): Promise<InterceptingProxy> {
  const started = await startInterceptingProxy(remote.url);
  proxies.push(started);
  return started;
}

/** Holds the first request of `method` the proxy passes on until `release` opens; `held` opens as it arrives. */
function holdFirst(through: InterceptingProxy, method: string) {
  const held = gate();
  const release = gate();
  let holding = false;
  const seen: (string | undefined)[] = [];
  through.intercept(async (asked) => {
    seen.push(asked);
    if (asked === method && !holding) {
      holding = true;
      held.open();
      await release.promise;
    }
    return undefined;
  });
  return { held, release, seen };
}

async function addStatic(at: TestAtrium, workspaceId: string, name: string, through: InterceptingProxy) {
  const created = await at.rest("alice", "POST", `/v1/workspaces/${workspaceId}/connections`, {
    name,
    url: through.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
  });
  expect(created.status).toBe(201);
}

async function versions(at: TestAtrium, path: string): Promise<number[]> {
  const listed = await at.rest("alice", "GET", `${path}/tools/snapshots`);
  return ((await listed.json()) as { snapshots: { version: number }[] }).snapshots.map((s) => s.version);
}

beforeAll(async () => {
  remote = await startRemoteServer(SERVER_OPTIONS);
  scripted = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium("atrium-connections-looks-", time, capturingLogger().log, {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: CHECK_INTERVAL_SECONDS,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await Promise.all(proxies.map((p) => p.close()));
  await remote?.stop();
  await scripted?.close();
});

describe("a graceful stop while a refresh photographs a server that holds its tools/list", () => {
  it("ends the refresh at once (409 stopping), the stop finishes, and nothing is recorded", async () => {
    const log = capturingLogger();
    let stopping = await startConnectionsAtrium(
      "atrium-connections-stop-",
      new FakeTime(Date.now()),
      log.log,
    );
    try {
      const workspaceId = await bootstrapWorkspace(stopping, "alice");
      const through = await proxy();
      const path = `/v1/workspaces/${workspaceId}/connections/stopped`;
      await addStatic(stopping, workspaceId, "stopped", through);
      await remote.control({ descriptions: { echo: "Echoes, changed since the snapshot." } });
      const { held, release, seen } = holdFirst(through, "tools/list");
      try {
        const refreshing = stopping.rest("alice", "POST", `${path}/tools/refresh`);
        await held.promise;
        // The instance's clock never moves: the drain deadline cannot end the stop, only the
        // refresh's answer can.
        let closed = false;
        const closing = stopping.atrium.close().then(() => {
          closed = true;
        });
        const refreshed = await refreshing;
        expect(refreshed.status).toBe(409);
        expect(await refreshed.json()).toMatchObject({ error: { code: "stopping" } });
        await eventually(() => expect(closed).toBe(true), { timeout: 10_000 });
        await closing;
        const sent = seen.length;
        release.open();
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(seen.length).toBe(sent);
      } finally {
        release.open();
        await remote.control({ reset: true, ...SERVER_OPTIONS });
      }
      stopping = await stopping.restart();
      expect(await versions(stopping, path)).toEqual([1]);
    } finally {
      await stopping.stop();
    }
  });
});

describe("a graceful stop while an OAuth add's discovery waits on a server that never answers", () => {
  it.each([
    ["a workspace connection", false],
    ["a member's personal connection", true],
  ] as const)(
    "%s: the add ends at once (409 stopping), the stop finishes, and nothing is stored",
    async (_, personal) => {
      let stopping = await startConnectionsAtrium(
        "atrium-connections-stop-oauth-",
        new FakeTime(Date.now()),
        capturingLogger().log,
      );
      const arrived = gate();
      // Takes each request and never answers it: only the stop can end the discovery.
      const silent = createServer(() => arrived.open());
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
      try {
        const workspaceId = await bootstrapWorkspace(stopping, "alice");
        const { port } = silent.address() as AddressInfo;
        const connections = `/v1/workspaces/${workspaceId}/connections`;
        const adding = stopping.rest("alice", "POST", connections, {
          name: "silent",
          url: `http://127.0.0.1:${port}/mcp`,
          auth: { kind: "oauth" },
          ...(personal ? { personal: true } : {}),
        });
        await arrived.promise;
        // The instance's clock never moves: the drain deadline cannot end the stop, only the add's answer can.
        let closed = false;
        const closing = stopping.atrium.close().then(() => {
          closed = true;
        });
        const added = await adding;
        expect(added.status).toBe(409);
        expect(await added.json()).toMatchObject({ error: { code: "stopping" } });
        await eventually(() => expect(closed).toBe(true), { timeout: 10_000 });
        await closing;
        stopping = await stopping.restart();
        const listed = (await (await stopping.rest("alice", "GET", connections)).json()) as {
          connections: unknown[];
        };
        expect(listed.connections).toEqual([]);
      } finally {
        silent.closeAllConnections();
        silent.close();
        await stopping.stop();
      }
    },
  );
});

describe("an OAuth connection disabled while its first photograph after sign-in is held", () => {
  it.each([
    ["a workspace connection", false],
    ["a member's personal connection", true],
  ] as const)(
    "%s: the photograph ends, no snapshot is appended, and it stays disabled",
    async (_, personal) => {
      const name = personal ? "first-mine" : "first-shared";
      const source = personal ? `my_${name}` : name;
      const path = `/v1/workspaces/${ws}/connections/${source}`;
      const added = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
        name,
        url: scripted.url,
        auth: { kind: "oauth", scopes: ["read"] },
        ...(personal ? { personal: true } : {}),
      });
      expect(added.status).toBe(201);
      const { go_url } = (await added.json()) as { go_url: string };
      const held = gate();
      const release = gate();
      const sent: (string | undefined)[] = [];
      scripted.beforeMcp = async (method) => {
        sent.push(method);
        if (method === "tools/list") {
          held.open();
          await release.promise;
        }
      };
      try {
        const authorizing = authorizeByHand(instance, "alice", go_url);
        await held.promise;
        expect((await instance.rest("alice", "POST", `${path}/disable`)).status).toBe(200);
        const sentAtDisable = sent.length;
        release.open();
        const landing = await authorizing;
        expect(landing.status).toBe(409);
        expect(landing.text).toContain("disabled");
        await new Promise((resolve) => setTimeout(resolve, 300));
        // The held tools/list was the photograph's last request.
        expect(sent.length).toBe(sentAtDisable);
        const view = (await (await instance.rest("alice", "GET", path)).json()) as {
          state: string;
          snapshot: unknown;
        };
        expect(view.snapshot).toBeNull();
        expect(view.state).toBe("disabled");
      } finally {
        release.open();
        scripted.beforeMcp = undefined;
      }
    },
  );
});

describe("a connection disabled while its scheduled credential check is held", () => {
  it("the check ends and concludes nothing: enabled again, the connection is running, not reauth_required", async () => {
    const through = await proxy();
    const path = `/v1/workspaces/${ws}/connections/checked`;
    await addStatic(instance, ws, "checked", through);
    const held = gate();
    const release = gate();
    let holding = false;
    // Every request of the check is refused 401 once released: a check that ran on would conclude
    // the credential lapsed.
    through.intercept(async () => {
      if (!holding) {
        holding = true;
        held.open();
        await release.promise;
      }
      return { status: 401 };
    });
    try {
      void time.advance(CHECK_INTERVAL_SECONDS * 1000);
      await held.promise;
      expect((await instance.rest("alice", "POST", `${path}/disable`)).status).toBe(200);
      release.open();
      await new Promise((resolve) => setTimeout(resolve, 300));
      through.intercept();
      const enabled = await instance.rest("alice", "POST", `${path}/enable`);
      expect(enabled.status).toBe(200);
      expect(((await enabled.json()) as { state: string }).state).toBe("running");
    } finally {
      release.open();
      through.intercept();
    }
  });
});
