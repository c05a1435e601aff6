import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { basename } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ConnectionStore } from "../../src/platform/connections/store.ts";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { gate } from "../helpers/gate.ts";
import { type InterceptingProxy, startInterceptingProxy } from "../helpers/intercepting-proxy.ts";
import { addMember } from "../helpers/members.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// Connections whose server answers slowly while a member or an admin changes them: what is left of
// a check or a refresh once the connection is gone must end quietly, never as an unhandled
// rejection, which ends a Node 20 process.

const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
const SERVER_OPTIONS = { requireHeader: { name: "x-api-key", value: SECRET } };
const time = new FakeTime(Date.now());
const captured = capturingLogger("debug");
const proxies: InterceptingProxy[] = [];
let remote: RemoteServer;
let instance: TestAtrium;
/** bob's own workspace, where he adds his personal connections. */
let solo: string;
/** alice's workspace, where she adds workspace connections. */
let shared: string;

function rest(user: string, method: string, path: string, body?: Record<string, unknown>) {
  return instance.rest(user, method, path, body);
}

async function proxy(): Promise<InterceptingProxy> {
  const started = await startInterceptingProxy(remote.url);
  proxies.push(started);
  return started;
}

/** Adds a workspace connection named `name` whose server is reached through `through`. */
async function addThrough(user: string, name: string, through: InterceptingProxy): Promise<void> {
  const created = await rest(user, "POST", `/v1/workspaces/${shared}/connections`, {
    name,
    url: through.url.href,
    auth: { kind: "static", header: "x-api-key", value: SECRET },
  });
  expect(created.status).toBe(201);
}

/** Holds the first request of `method` the proxy passes on until `release` opens; `held` opens as it arrives. */
function holdFirst(through: InterceptingProxy, method: string) {
  const held = gate();
  const release = gate();
  let holding = false;
  through.intercept(async (seen) => {
    if (seen === method && !holding) {
      holding = true;
      held.open();
      await release.promise;
    }
    return undefined;
  });
  return { held, release };
}

async function call(user: string, ws: string, name: string) {
  const response = await rest(user, "POST", `/v1/workspaces/${ws}/tools/call`, {
    name,
    arguments: { text: "hi" },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { isError?: boolean };
}

/** Records every unhandled rejection while `run` runs and a little after. */
async function unhandledDuring(run: () => Promise<void>): Promise<unknown[]> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    await run();
    await new Promise((resolve) => setTimeout(resolve, 300));
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  return unhandled;
}

beforeAll(async () => {
  remote = await startRemoteServer(SERVER_OPTIONS);
  instance = await startConnectionsAtrium("atrium-connection-races-", time, captured.log);
  solo = await bootstrapWorkspace(instance, "bob");
  shared = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await Promise.all(proxies.map((p) => p.close()));
  await remote?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

describe("a credential check a 401 woke, whose connection is removed while the server is slow", () => {
  it.each([
    ["a member's personal connection", "bob", () => solo, true],
    ["a workspace connection", "alice", () => shared, false],
  ] as const)("%s: the check ends quietly and the instance keeps serving", async (_, user, ws, personal) => {
    const through = await proxy();
    const name = `slow-${user}`;
    const created = await rest(user, "POST", `/v1/workspaces/${ws()}/connections`, {
      name,
      url: through.url.href,
      auth: { kind: "static", header: "x-api-key", value: SECRET },
      ...(personal ? { personal: true } : {}),
    });
    expect(created.status).toBe(201);
    const source = personal ? `my_${name}` : name;
    // Connected once, so the next call sends tools/call first. Its 401 wakes the check, whose
    // client connects afresh, as does the call's own second look at the server: both are held.
    expect((await call(user, ws(), `${source}__echo`)).isError).toBeFalsy();
    const bothHeld = gate();
    const serverAnswers = gate();
    let held = 0;
    let answered = 0;
    through.intercept(async (method) => {
      if (method === "tools/call") return { status: 401 };
      held += 1;
      if (held === 2) bothHeld.open();
      await serverAnswers.promise;
      answered += 1;
      return { status: 401 };
    });
    const path = `/v1/workspaces/${ws()}/connections/${source}`;
    const unhandled = await unhandledDuring(async () => {
      const failed = call(user, ws(), `${source}__echo`);
      await bothHeld.promise;
      // The removal is stored at once, and closing the client cuts its held connect.
      const removed = rest(user, "DELETE", path);
      await eventually(async () =>
        expect(await (await rest(user, "GET", path)).json()).toMatchObject({
          error: { code: "connection_not_found" },
        }),
      );
      serverAnswers.open();
      expect((await removed).status).toBe(204);
      expect((await failed).isError).toBe(true);
      await eventually(() => expect(answered).toBe(held));
    });
    expect(unhandled).toEqual([]);
    expect((await rest(user, "GET", `/v1/workspaces/${ws()}/connections`)).status).toBe(200);
  });
});

describe("an admin's disable or remove, while the server takes a connect and never answers it", () => {
  /** A connection through a new proxy whose first `server/discover` is held until `release` opens. */
  async function heldConnection(user: string, ws: string, name: string, personal: boolean) {
    const through = await proxy();
    const created = await rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
      name,
      url: through.url.href,
      auth: { kind: "static", header: "x-api-key", value: SECRET },
      ...(personal ? { personal: true } : {}),
    });
    expect(created.status).toBe(201);
    const held = gate();
    const release = gate();
    let discovers = 0;
    through.intercept(async (method) => {
      if (method === "server/discover" && ++discovers === 1) {
        held.open();
        await release.promise;
      }
      return undefined;
    });
    return { held: held.promise, release: release.open };
  }

  it.each([
    ["a member's personal connection", "bob", () => solo, true],
    ["a workspace connection", "alice", () => shared, false],
  ] as const)(
    "%s: a disable behind a refresh answers while the server never answers, and nothing is served",
    async (_, user, ws, personal) => {
      const name = `held-refresh-${user}`;
      const source = personal ? `my_${name}` : name;
      const path = `/v1/workspaces/${ws()}/connections/${source}`;
      const server = await heldConnection(user, ws(), name, personal);
      // A member's call connects the served client, and the server holds that connect.
      const calling = call(user, ws(), `${source}__echo`);
      await server.held;
      const callsBefore = (await remote.calls()).length;
      // The refresh photographs on a client of its own, then swaps the served client for a new one,
      // which closes the one still connecting once that connect ends; the disable comes after the
      // refresh answered (one that came during its photograph would end it, tested below).
      expect((await rest(user, "POST", `${path}/tools/refresh`)).status).toBe(200);
      const disabled = await rest(user, "POST", `${path}/disable`);
      expect(disabled.status).toBe(200);
      expect(await disabled.json()).toMatchObject({ state: "disabled" });
      // The cut connect fails the call; nothing reached the tool, before or after the server answers.
      expect((await calling).isError).toBe(true);
      server.release();
      expect((await call(user, ws(), `${source}__echo`)).isError).toBe(true);
      expect((await remote.calls()).length).toBe(callsBefore);
      expect(await (await rest(user, "GET", path)).json()).toMatchObject({ state: "disabled" });
    },
  );

  it.each([
    ["a member's personal connection", "bob", () => solo, true],
    ["a workspace connection", "alice", () => shared, false],
  ] as const)(
    "%s: a remove answers while the server never answers a member's connect",
    async (_, user, ws, personal) => {
      const name = `held-remove-${user}`;
      const source = personal ? `my_${name}` : name;
      const path = `/v1/workspaces/${ws()}/connections/${source}`;
      const server = await heldConnection(user, ws(), name, personal);
      const calling = call(user, ws(), `${source}__echo`);
      await server.held;
      const callsBefore = (await remote.calls()).length;
      expect((await rest(user, "DELETE", path)).status).toBe(204);
      expect((await calling).isError).toBe(true);
      server.release();
      expect((await call(user, ws(), `${source}__echo`)).isError).toBe(true);
      expect((await remote.calls()).length).toBe(callsBefore);
    },
  );
});

describe("a refresh whose connection is disabled or removed while the server holds its photograph", () => {
  async function versions(user: string, path: string): Promise<number[]> {
    const listed = await rest(user, "GET", `${path}/tools/snapshots`);
    return ((await listed.json()) as { snapshots: { version: number }[] }).snapshots.map((s) => s.version);
  }

  it.each([
    ["a workspace connection", "disabled", "server/discover", "alice", () => shared, false],
    ["a workspace connection", "removed", "tools/list", "alice", () => shared, false],
    ["a member's personal connection", "disabled", "tools/list", "bob", () => solo, true],
    ["a member's personal connection", "removed", "server/discover", "bob", () => solo, true],
  ] as const)(
    "%s %s while its %s is held: the refresh ends at once, recording nothing and sending nothing more",
    async (_, change, heldMethod, user, ws, personal) => {
      const through = await proxy();
      const name = `photo-${change}-${user}`;
      const source = personal ? `my_${name}` : name;
      const path = `/v1/workspaces/${ws()}/connections/${source}`;
      const created = await rest(user, "POST", `/v1/workspaces/${ws()}/connections`, {
        name,
        url: through.url.href,
        auth: { kind: "static", header: "x-api-key", value: SECRET },
        ...(personal ? { personal: true } : {}),
      });
      expect(created.status).toBe(201);
      const ledger = async () => (await rest(user, "GET", `/v1/workspaces/${ws()}/audit?limit=500`)).text();
      const ledgerBefore = await ledger();
      const held = gate();
      const release = gate();
      const methods: (string | undefined)[] = [];
      let holding = false;
      through.intercept(async (method) => {
        methods.push(method);
        if (method === heldMethod && !holding) {
          holding = true;
          held.open();
          await release.promise;
        }
        return undefined;
      });
      // A server that changed since the snapshot: a refresh that ran to its end would append one.
      await remote.control({ descriptions: { echo: `Echoes, as ${source}'s refresh would photograph it.` } });
      try {
        let answered = false;
        const refreshing = rest(user, "POST", `${path}/tools/refresh`).finally(() => {
          answered = true;
        });
        await held.promise;
        const unhandled = await unhandledDuring(async () => {
          if (change === "disabled") expect((await rest(user, "POST", `${path}/disable`)).status).toBe(200);
          else expect((await rest(user, "DELETE", path)).status).toBe(204);
          // Answered while the server still holds the photograph's request.
          await eventually(() => expect(answered).toBe(true), { timeout: 5_000 });
          const refreshed = await refreshing;
          if (change === "disabled") {
            expect(refreshed.status).toBe(409);
            expect(await refreshed.json()).toMatchObject({ error: { code: "refresh_interrupted" } });
          } else {
            expect(refreshed.status).toBe(404);
            expect(await refreshed.json()).toMatchObject({ error: { code: "connection_not_found" } });
          }
          const heldAtServer = async () =>
            (await remote.requests()).filter((request) => request.method === heldMethod).length;
          const reachedBefore = await heldAtServer();
          const seen = methods.length;
          release.open();
          // The held request reaches the server once released; the photograph sends nothing after it.
          await eventually(async () => expect(await heldAtServer()).toBe(reachedBefore + 1));
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(methods.length).toBe(seen);
        });
        expect(unhandled).toEqual([]);
        if (change === "disabled") {
          expect(await versions(user, path)).toEqual([1]);
          // Only the refreshes under way end: a disabled connection is still refreshed for review.
          expect((await rest(user, "POST", `${path}/tools/refresh`)).status).toBe(200);
          expect(await versions(user, path)).toEqual([2, 1]);
        }
      } finally {
        release.open();
        await remote.control({ reset: true, ...SERVER_OPTIONS });
      }
      expect(await ledger()).toBe(ledgerBefore);
    },
  );
});

describe("a disable stored while a refresh's snapshot waits to be written", () => {
  it("ends that refresh: its snapshot, queued behind the disable's write, is not appended", async () => {
    const through = await proxy();
    const name = "race-append";
    const path = `/v1/workspaces/${shared}/connections/${name}`;
    expect(
      (
        await rest("alice", "POST", `/v1/workspaces/${shared}/connections`, {
          name,
          url: through.url.href,
          auth: { kind: "static", header: "x-api-key", value: SECRET },
        })
      ).status,
    ).toBe(201);
    await remote.control({ descriptions: { echo: "Echoes, changed since the snapshot." } });
    const { held: listHeld, release: listRelease } = holdFirst(through, "tools/list");
    // Holds the disable inside the store's lock (its read before its write), and tells when the
    // refresh's append has queued behind it.
    let armed = false;
    const inLock = gate();
    const writeRelease = gate();
    const appendQueued = gate();
    const update = ConnectionStore.prototype.update;
    const get = ConnectionStore.prototype.get;
    const append = ConnectionStore.prototype.appendSnapshot;
    const spies = [
      vi.spyOn(ConnectionStore.prototype, "update").mockImplementation(function (
        this: ConnectionStore,
        ...args
      ) {
        if (args[1] === name) armed = true;
        return update.apply(this, args);
      }),
      vi.spyOn(ConnectionStore.prototype, "get").mockImplementation(async function (
        this: ConnectionStore,
        ...args
      ) {
        if (armed && args[1] === name) {
          armed = false;
          inLock.open();
          await writeRelease.promise;
        }
        return get.apply(this, args);
      }),
      vi.spyOn(ConnectionStore.prototype, "appendSnapshot").mockImplementation(function (
        this: ConnectionStore,
        ...args
      ) {
        if (args[1] === name) appendQueued.open();
        return append.apply(this, args);
      }),
    ];
    try {
      const refreshing = rest("alice", "POST", `${path}/tools/refresh`);
      await listHeld.promise;
      const disabling = rest("alice", "POST", `${path}/disable`);
      await inLock.promise; // the disable holds the store's lock
      listRelease.open(); // the photograph ends now, before the disable is stored
      await appendQueued.promise; // its append waits behind the disable's write
      writeRelease.open();
      const [refreshed, disabled] = await Promise.all([refreshing, disabling]);
      const listed = (await (await rest("alice", "GET", `${path}/tools/snapshots`)).json()) as {
        snapshots: { version: number }[];
      };
      const view = (await (await rest("alice", "GET", path)).json()) as { state: string };
      expect(view.state).toBe("disabled");
      expect(disabled.status).toBe(200);
      expect(refreshed.status).toBe(409);
      expect(listed.snapshots.map((s) => s.version)).toEqual([1]);
    } finally {
      for (const spy of spies) spy.mockRestore();
      listRelease.open();
      writeRelease.open();
      await remote.control({ reset: true, ...SERVER_OPTIONS });
    }
  });
});

describe("a disable of a connection already disabled", () => {
  it("leaves a refresh started after the first disable to run", async () => {
    const through = await proxy();
    const name = "race-redisable";
    const path = `/v1/workspaces/${shared}/connections/${name}`;
    await addThrough("alice", name, through);
    // Disabled first: the admin takes it out of service.
    expect((await rest("alice", "POST", `${path}/disable`)).status).toBe(200);
    const { held, release } = holdFirst(through, "tools/list");
    try {
      // Then refreshes it for review, which ADR 0122 says runs.
      const refreshing = rest("alice", "POST", `${path}/tools/refresh`);
      await held.promise;
      // A repeated disable (a double click, a retry, an idempotent script) changes nothing stored...
      const again = await rest("alice", "POST", `${path}/disable`);
      expect(again.status).toBe(200);
      release.open();
      const refreshed = await refreshing;
      // ...so the review refresh, started after the disable, is not ended as "disabled meanwhile".
      expect(refreshed.status).toBe(200);
    } finally {
      release.open();
    }
  });
});

describe("a disable whose write fails", () => {
  it("ends no refresh: the connection is still in service, and the refresh records its snapshot", async () => {
    const through = await proxy();
    const name = "race-writefail";
    const path = `/v1/workspaces/${shared}/connections/${name}`;
    await addThrough("alice", name, through);
    await remote.control({ descriptions: { echo: "Echoes, changed since the snapshot." } });
    const { held, release } = holdFirst(through, "tools/list");
    try {
      const refreshing = rest("alice", "POST", `${path}/tools/refresh`);
      await held.promise;
      // The disk refuses the disabled record's flush, as a full disk would.
      const full = Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      let disabled: Response | undefined;
      await journalDuring(
        async () => {
          disabled = await rest("alice", "POST", `${path}/disable`);
        },
        {
          sync: (file) =>
            file.includes(`/${name}/`) && basename(file).startsWith(".tmp-") ? full : undefined,
        },
      );
      expect(disabled?.status).toBe(507); // a full disk (adr/0165)
      release.open();
      expect((await refreshing).status).toBe(200);
      const view = (await (await rest("alice", "GET", path)).json()) as {
        state: string;
        snapshot: { version: number };
      };
      expect(view.state).toBe("running");
      expect(view.snapshot.version).toBe(2);
    } finally {
      release.open();
      await remote.control({ reset: true, ...SERVER_OPTIONS });
    }
  });
});

describe("an admin removed while their connection's server keeps them waiting", () => {
  async function carlAsAdmin(): Promise<string> {
    const carl = testPrincipal("carl").id;
    await addMember(instance.rest.bind(instance), "alice", shared, "carl", { principalId: carl }, "admin");
    return carl;
  }

  it("adds nothing: the connection is not stored, and nothing is served", async () => {
    const carl = await carlAsAdmin();
    const through = await proxy();
    const { held, release } = holdFirst(through, "tools/list");
    try {
      const adding = rest("carl", "POST", `/v1/workspaces/${shared}/connections`, {
        name: "race-removed-add",
        url: through.url.href,
        auth: { kind: "static", header: "x-api-key", value: SECRET },
      });
      await held.promise;
      expect((await rest("alice", "DELETE", `/v1/workspaces/${shared}/members/${carl}`)).status).toBe(204);
      release.open();
      expect((await adding).status).toBe(404);
      expect(
        (await rest("alice", "GET", `/v1/workspaces/${shared}/connections/race-removed-add`)).status,
      ).toBe(404);
    } finally {
      release.open();
    }
  });

  it("records no refreshed snapshot", async () => {
    const carl = await carlAsAdmin();
    const through = await proxy();
    const name = "race-removed-refresh";
    const path = `/v1/workspaces/${shared}/connections/${name}`;
    await addThrough("carl", name, through);
    await remote.control({ descriptions: { echo: "Echoes, changed since the snapshot." } });
    const { held, release } = holdFirst(through, "tools/list");
    try {
      const refreshing = rest("carl", "POST", `${path}/tools/refresh`);
      await held.promise;
      expect((await rest("alice", "DELETE", `/v1/workspaces/${shared}/members/${carl}`)).status).toBe(204);
      release.open();
      expect((await refreshing).status).toBe(404);
      const listed = (await (await rest("alice", "GET", `${path}/tools/snapshots`)).json()) as {
        snapshots: { version: number }[];
      };
      expect(listed.snapshots.map((snapshot) => snapshot.version)).toEqual([1]);
    } finally {
      release.open();
      await remote.control({ reset: true, ...SERVER_OPTIONS });
    }
  });
});

describe("a member removed from a workspace while the server photographs their new personal connection", () => {
  it("stores nothing, and is answered as in a workspace they never belonged to", async () => {
    const carol = testPrincipal("carol").id;
    const created = await rest("alice", "POST", "/v1/workspaces", { name: "carol's team" });
    const team = ((await created.json()) as { id: string }).id;
    await addMember(instance.rest.bind(instance), "alice", team, "carol", { principalId: carol });
    const through = await proxy();
    const { held, release } = holdFirst(through, "tools/list");
    try {
      const adding = rest("carol", "POST", `/v1/workspaces/${team}/connections`, {
        personal: true,
        name: "leaving",
        url: through.url.href,
        auth: { kind: "static", header: "x-api-key", value: SECRET },
      });
      await held.promise;
      expect((await rest("alice", "DELETE", `/v1/workspaces/${team}/members/${carol}`)).status).toBe(204);
      release.open();
      const added = await adding;
      const stranger = await rest("carol", "GET", `/v1/workspaces/${shared}/connections`);
      const answer = async (response: Response, ws: string) => ({
        status: response.status,
        body: (await response.text()).replaceAll(ws, "<ws>"),
      });
      expect(await answer(added, team)).toEqual(await answer(stranger, shared));
      expect(added.status).toBe(404);
    } finally {
      release.open();
    }
    // Nothing of it is stored under carol: her own workspace shows no personal connection.
    const own = await bootstrapWorkspace(instance, "carol");
    const listed = (await (await rest("carol", "GET", `/v1/workspaces/${own}/connections`)).json()) as {
      connections: { name: string }[];
    };
    expect(listed.connections.map((c) => c.name)).not.toContain("my_leaving");
  });
});

describe("a member removed from a workspace while the server photographs a refresh of their personal connection", () => {
  it("records nothing, and is answered as in a workspace they never belonged to", async () => {
    const dave = testPrincipal("dave").id;
    const created = await rest("alice", "POST", "/v1/workspaces", { name: "dave's team" });
    const team = ((await created.json()) as { id: string }).id;
    await addMember(instance.rest.bind(instance), "alice", team, "dave", { principalId: dave });
    const through = await proxy();
    const added = await rest("dave", "POST", `/v1/workspaces/${team}/connections`, {
      personal: true,
      name: "refreshing",
      url: through.url.href,
      auth: { kind: "static", header: "x-api-key", value: SECRET },
    });
    expect(added.status).toBe(201);
    await remote.control({ descriptions: { echo: "Echoes, changed since the snapshot." } });
    const { held, release } = holdFirst(through, "tools/list");
    try {
      const refreshing = rest(
        "dave",
        "POST",
        `/v1/workspaces/${team}/connections/my_refreshing/tools/refresh`,
      );
      await held.promise;
      expect((await rest("alice", "DELETE", `/v1/workspaces/${team}/members/${dave}`)).status).toBe(204);
      release.open();
      const refreshed = await refreshing;
      const stranger = await rest("dave", "GET", `/v1/workspaces/${shared}/connections`);
      const answer = async (response: Response, ws: string) => ({
        status: response.status,
        body: (await response.text()).replaceAll(ws, "<ws>"),
      });
      expect(await answer(refreshed, team)).toEqual(await answer(stranger, shared));
      expect(refreshed.status).toBe(404);
    } finally {
      release.open();
      await remote.control({ reset: true, ...SERVER_OPTIONS });
    }
    const own = await bootstrapWorkspace(instance, "dave");
    const path = `/v1/workspaces/${own}/connections/my_refreshing/tools/snapshots`;
    const listed = (await (await rest("dave", "GET", path)).json()) as { snapshots: { version: number }[] };
    expect(listed.snapshots.map((snapshot) => snapshot.version)).toEqual([1]);
  });
});
