import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger, type Logger } from "../../src/log.ts";
import { Authorizer } from "../../src/platform/connections/oauth/authorizer.ts";
import { bootstrapWorkspace, capturingLogger, TEST_USER_HEADER, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { type Gate, gate } from "../helpers/gate.ts";
import {
  authorizeByHand,
  deliverByHand,
  openGoUrl,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// A graceful stop cuts at once what an OAuth sign-in only looks at on its authorization server —
// an add's discovery and client registration, a sign-in started again, a photograph — which
// answers 409 `stopping` and stores nothing; an exchange of credentials (the callback's code, a
// token refresh, its discovery included) it lets finish within the drain, and its answer is stored
// (adr/0122, amended). The authorization server is real, on 127.0.0.1, and holds the one request
// a test names until the test lets it go. The request timeout is the longest allowed, and the
// clock is fake: the drain deadline never cuts anything here.

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
  scripted.beforeMcp = undefined;
  scripted.token = undefined;
  scripted.expiresIn = 3600;
  vi.restoreAllMocks();
});

afterAll(async () => {
  await scripted?.close();
});

function start(time = new FakeTime(Date.now()), log: Logger = capturingLogger().log): Promise<TestAtrium> {
  return startConnectionsAtrium("atrium-connections-oauth-stop-", time, log, {
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

/** A workspace connection "held", authorized, whose access token (60 s) has expired by the next request. */
async function authorizedExpiring(instance: TestAtrium, time: FakeTime, workspaceId: string) {
  scripted.expiresIn = 60;
  const added = await add(instance, workspaceId, false);
  const { go_url } = (await added.json()) as { go_url: string };
  expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
  time.jump(120_000);
}

/**
 * The authorization server rotates refresh tokens, each good once (as OAuth 2.1 servers do), and
 * counts the refreshes it was sent; with `hold`, it holds its answer to the next refresh — the
 * refresh token it was sent already spent — until `release` opens: a refresh whose answer Atrium
 * dropped leaves it only a spent token.
 */
function rotatingRefresh({ hold }: { hold: boolean }): { held: Gate; release: Gate; sent: () => number } {
  const [held, release] = [gate(), gate()];
  const spent = new Set<string>();
  let holding = hold;
  scripted.token = async (form) => {
    if (form.get("grant_type") !== "refresh_token") return scripted.honestToken(form);
    const given = form.get("refresh_token") ?? "";
    if (spent.has(given)) return Response.json({ error: "invalid_grant" }, { status: 400 });
    spent.add(given);
    const answer = await scripted.honestToken(form);
    if (holding) {
      holding = false;
      held.open();
      await release.promise;
    }
    return answer;
  };
  return { held, release, sent: () => spent.size };
}

/** Where a refresh first discovers the authorization server: the resource's metadata. */
const DISCOVERY = "/.well-known/oauth-protected-resource/mcp";

/** Holds the next request to `path` at the authorization server until `release` opens. */
function holdNext(path: string): { held: Gate; release: Gate } {
  const [held, release] = [gate(), gate()];
  let holding = true;
  scripted.beforeRequest = async (asked) => {
    if (asked !== path || !holding) return;
    holding = false;
    held.open();
    await release.promise;
  };
  return { held, release };
}

/**
 * A rotating server holding a refresh at `at`: its discovery of the authorization server, or the
 * answer to its token request, the refresh token it was sent already spent.
 */
function holdRefresh(at: "discovery" | "token"): { held: Gate; release: Gate; sent: () => number } {
  const rotation = rotatingRefresh({ hold: at === "token" });
  return at === "discovery" ? { ...holdNext(DISCOVERY), sent: rotation.sent } : rotation;
}

const HELD = [
  ["its discovery", "discovery"],
  ["its token request", "token"],
] as const;

async function echoed(instance: TestAtrium, workspaceId: string): Promise<{ status: number; body: unknown }> {
  const called = await instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/tools/call`, {
    name: "held__echo",
    arguments: { text: "hi" },
  });
  return { status: called.status, body: await called.json() };
}

const ECHOED = { status: 200, body: { content: [{ text: "hi" }] } };

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
        // The stop's answer, not the registration's failure (a 400 refusal by the server), naming
        // what was cut: no photograph, which an OAuth add does not take.
        const body = (await added?.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe("stopping");
        expect(body.error.message).toContain("discovery of its authorization server and client registration");
        expect(body.error.message).not.toContain("photograph");
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
        const events = await stopWhileHeld(instance, DISCOVERY, async () => {
          started = await instance.rest(
            "alice",
            "POST",
            `/v1/workspaces/${workspaceId}/connections/${source}/oauth/start`,
          );
          return started;
        });
        expect(events).toEqual([`${DISCOVERY} held`, "answered 409", `${DISCOVERY} let go`]);
        expect(await started?.json()).toMatchObject({
          error: { code: "stopping", message: expect.stringContaining("sign-in's discovery") },
        });
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

/**
 * Signs in up to the authorization server's answer, delivers it to the callback, holds the code's
 * exchange at the token endpoint, begins the stop, then lets the exchange go: the callback's
 * answer, once the stop has finished.
 */
async function stopDuringExchange(instance: TestAtrium, goUrl: string) {
  const { location, cookie } = await openGoUrl(instance, "alice", goUrl);
  const atServer = await fetch(location, { redirect: "manual" });
  const back = new URL(String(atServer.headers.get("location")));
  const [held, release] = [gate(), gate()];
  scripted.beforeRequest = async (path) => {
    if (path !== "/token") return;
    held.open();
    await release.promise;
  };
  try {
    const landing = deliverByHand(instance, "alice", cookie, back);
    await held.promise;
    const closing = instance.atrium.close();
    release.open();
    const landed = await landing;
    await closing;
    return landed;
  } finally {
    release.open();
  }
}

async function startAgain(instance: TestAtrium, workspaceId: string, name: string): Promise<string> {
  const started = await instance.rest(
    "alice",
    "POST",
    `/v1/workspaces/${workspaceId}/connections/${name}/oauth/start`,
  );
  return ((await started.json()) as { go_url: string }).go_url;
}

describe("a graceful stop while the callback's token exchange is held", () => {
  it.each(PERSONAL)(
    "%s, pending: the exchange finishes and its tokens are activated; the first photograph, cut, is answered as a 409 page",
    async (_, personal) => {
      let instance = await start();
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        const added = await add(instance, workspaceId, personal);
        const { go_url } = (await added.json()) as { go_url: string };
        const landed = await stopDuringExchange(instance, go_url);
        // A page, as every other callback outcome, saying what was kept (the authorization) and
        // what was not (the server's tools): not a look's JSON "nothing was recorded".
        expect({ status: landed.status, type: landed.headers["content-type"] }).toEqual({
          status: 409,
          type: expect.stringMatching(/^text\/html/),
        });
        expect(landed.text).toContain("is authorized, but Atrium began to stop");
        const name = personal ? "my_held" : "held";
        instance = await instance.restart();
        expect(await connectionsOf(instance, workspaceId)).toMatchObject([
          { name, state: "pending_auth", authorizationGeneration: 1 },
        ]);
        // Signing in again photographs it, as a second authorization (generation 2): the first
        // one was activated.
        const again = await startAgain(instance, workspaceId, name);
        expect((await authorizeByHand(instance, "alice", again)).status).toBe(200);
        expect(await connectionsOf(instance, workspaceId)).toMatchObject([
          { name, state: "running", authorizationGeneration: 2 },
        ]);
      } finally {
        await instance.stop();
      }
    },
  );

  it("a re-authorization: the exchange finishes, the callback answers Connected, and the new tokens are activated", async () => {
    let instance = await start();
    try {
      const workspaceId = await bootstrapWorkspace(instance, "alice");
      const added = await add(instance, workspaceId, false);
      const { go_url } = (await added.json()) as { go_url: string };
      expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
      const landed = await stopDuringExchange(instance, await startAgain(instance, workspaceId, "held"));
      expect({ status: landed.status, text: landed.text }).toMatchObject({
        status: 200,
        text: expect.stringContaining("is authorized (generation 2)"),
      });
      instance = await instance.restart();
      expect(await connectionsOf(instance, workspaceId)).toMatchObject([
        { name: "held", state: "running", authorizationGeneration: 2 },
      ]);
      expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
    } finally {
      await instance.stop();
    }
  });
});

describe("a graceful stop while a credential refresh waits on the authorization server", () => {
  // The photograph is a look: it stops waiting for the token while the server still holds the
  // refresh's request. The refresh is not cut, and the stop waits for it (bounded by its drain
  // deadline), its answer sealed: the refresh token, rotated, is the one the restart uses — the
  // spent one would be refused (invalid_grant).
  it.each(HELD)(
    "%s is not cut: the photograph waiting on it answers 409 stopping at once, and the refresh is made and sealed",
    async (_, at) => {
      const time = new FakeTime(Date.now());
      let instance = await start(time);
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        // The next photograph refreshes the token first, discovering the authorization server
        // again (this process found it for the add, not for the connection).
        await authorizedExpiring(instance, time, workspaceId);
        const { held, release, sent } = holdRefresh(at);
        const refreshed = instance.rest(
          "alice",
          "POST",
          `/v1/workspaces/${workspaceId}/connections/held/tools/refresh`,
        );
        await held.promise;
        const closing = instance.atrium.close();
        expect(await (await refreshed).json()).toMatchObject({ error: { code: "stopping" } });
        release.open();
        await closing;
        expect(sent()).toBe(1);
        instance = await instance.restart();
        time.jump(120_000);
        expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
        expect(sent()).toBe(2);
      } finally {
        await instance.stop();
      }
    },
  );
});

describe("a tool call in flight at a graceful stop whose token needs refreshing", () => {
  // The drain lets the call finish (ADR 0023, 0093): no part of its refresh is cut. The stop
  // begins while the server holds the request (close() ends every look before it returns), and
  // only then is the request let go.
  it.each(HELD)(
    "%s held: the call finishes with the server's answer, and the rotated refresh token is sealed: after a restart no sign-in is needed",
    async (_, at) => {
      const time = new FakeTime(Date.now());
      let instance = await start(time);
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        await authorizedExpiring(instance, time, workspaceId);
        const { held, release, sent } = holdRefresh(at);
        const inFlight = echoed(instance, workspaceId);
        await held.promise;
        const closing = instance.atrium.close();
        release.open();
        expect(await inFlight).toMatchObject(ECHOED);
        await closing;
        instance = await instance.restart();
        time.jump(120_000);
        expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
        expect(sent()).toBe(2);
      } finally {
        await instance.stop();
      }
    },
  );
});

/** A logger that opens `logged` at the first line whose message contains `words`. */
function loggerOpening(words: string, logged: Gate): Logger {
  return createLogger("info", {
    write(line: string) {
      if (String((JSON.parse(line) as { msg?: unknown }).msg).includes(words)) logged.open();
    },
  });
}

describe("a token refresh begun while a request still drains", () => {
  // The stop waited for the refreshes under way once, as it began, beside the drain: a request
  // still being answered that refreshed its token later was not waited for once its caller went
  // away, and the root was let go (the process exiting) while the authorization server had
  // already rotated the refresh token. The wait is after the drain, for every exchange begun
  // until then; the stop says in its log that it waits, and the server is let go only then.
  it("is waited for before the root is let go, and its rotated refresh token is sealed", async () => {
    const time = new FakeTime(Date.now());
    const waiting = gate();
    let instance = await start(time, loggerOpening("credential exchanges under way", waiting));
    const [initHeld, initRelease] = [gate(), gate()];
    try {
      const workspaceId = await bootstrapWorkspace(instance, "alice");
      scripted.expiresIn = 60;
      const added = await add(instance, workspaceId, false);
      const { go_url } = (await added.json()) as { go_url: string };
      expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
      // The served client connects at the call, its token still valid: its first request is held.
      let holdingInit = true;
      scripted.beforeMcp = async (method) => {
        if (method !== "server/discover" || !holdingInit) return;
        holdingInit = false;
        initHeld.open();
        await initRelease.promise;
      };
      const { held, release, sent } = rotatingRefresh({ hold: true });
      const caller = new AbortController();
      const call = fetch(`${instance.url}/v1/workspaces/${workspaceId}/tools/call`, {
        method: "POST",
        headers: { [TEST_USER_HEADER]: "alice", "content-type": "application/json" },
        body: JSON.stringify({ name: "held__echo", arguments: { text: "hi" } }),
        signal: caller.signal,
      }).catch(() => undefined);
      await initHeld.promise;
      // The stop begins with no refresh under way; the token expires while the call drains, and
      // its next request refreshes it: the server rotates, and holds its answer.
      const closing = instance.atrium.close();
      time.jump(120_000);
      initRelease.open();
      await held.promise;
      // The caller goes away: nothing waits for the refresh but the stop.
      caller.abort();
      await call;
      const first = await Promise.race([
        closing.then(() => "the stop finished"),
        waiting.promise.then(() => "the stop waits for the refresh"),
      ]);
      release.open();
      await closing;
      expect(first).toBe("the stop waits for the refresh");
      instance = await instance.restart();
      time.jump(120_000);
      expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
      expect(sent()).toBe(2);
    } finally {
      initRelease.open();
      await instance.stop();
    }
  });
});

/**
 * Opens `joined` once Authorizer.authority has been called `times` times: the second step waiting
 * on a connection's discovery has joined the one under way (it is discovered once per process).
 */
function authorityCalls(times: number, joined: Gate): void {
  const original = Authorizer.prototype.authority;
  let calls = 0;
  vi.spyOn(Authorizer.prototype, "authority").mockImplementation(function (this: Authorizer, ...args) {
    calls += 1;
    const answer = original.apply(this, args);
    if (calls === times) joined.open();
    return answer;
  });
}

describe("a sign-in and a tool call's token refresh sharing a discovery at a graceful stop", () => {
  // One discovery per connection is shared by the steps that wait on it. It was made with the
  // signal of the step that began it: a sign-in's look, cut by the stop, failed a tool call's
  // refresh that had joined it ("failed unexpectedly"); and a sign-in that joined a refresh's
  // discovery waited on it to its end, and answered a go_url during the stop.
  it("the sign-in began it: it answers 409 stopping, and the tool call in flight finishes with the server's answer", async () => {
    const time = new FakeTime(Date.now());
    let instance = await start(time);
    const joined = gate();
    let discovery: { held: Gate; release: Gate } | undefined;
    try {
      const workspaceId = await bootstrapWorkspace(instance, "alice");
      await authorizedExpiring(instance, time, workspaceId);
      discovery = holdNext(DISCOVERY);
      authorityCalls(2, joined);
      const started = instance.rest(
        "alice",
        "POST",
        `/v1/workspaces/${workspaceId}/connections/held/oauth/start`,
      );
      await discovery.held.promise;
      const inFlight = echoed(instance, workspaceId);
      await joined.promise;
      const closing = instance.atrium.close();
      expect(await (await started).json()).toMatchObject({ error: { code: "stopping" } });
      discovery.release.open();
      expect(await inFlight).toMatchObject(ECHOED);
      await closing;
      instance = await instance.restart();
      time.jump(120_000);
      expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
    } finally {
      discovery?.release.open();
      await instance.stop();
    }
  });

  it("the tool call's refresh began it: the sign-in answers 409 stopping before the server lets go, and the call finishes", async () => {
    const time = new FakeTime(Date.now());
    let instance = await start(time);
    const joined = gate();
    let discovery: { held: Gate; release: Gate } | undefined;
    try {
      const workspaceId = await bootstrapWorkspace(instance, "alice");
      await authorizedExpiring(instance, time, workspaceId);
      discovery = holdNext(DISCOVERY);
      authorityCalls(2, joined);
      const inFlight = echoed(instance, workspaceId);
      await discovery.held.promise;
      const started = instance.rest(
        "alice",
        "POST",
        `/v1/workspaces/${workspaceId}/connections/held/oauth/start`,
      );
      await joined.promise;
      const closing = instance.atrium.close();
      // Answered while the server still holds the discovery, which the refresh goes on waiting for.
      const answered = await started;
      expect({ status: answered.status, body: await answered.json() }).toMatchObject({
        status: 409,
        body: { error: { code: "stopping" } },
      });
      discovery.release.open();
      expect(await inFlight).toMatchObject(ECHOED);
      await closing;
      instance = await instance.restart();
      time.jump(120_000);
      expect(await echoed(instance, workspaceId)).toMatchObject(ECHOED);
    } finally {
      discovery?.release.open();
      await instance.stop();
    }
  });
});

describe("a callback whose browser goes away while its code exchange is held at a graceful stop", () => {
  // The drain stops waiting for a request whose client has gone; its code exchange, not tracked,
  // was then not waited for either, and the root was let go with the code spent and its tokens
  // not activated. It is an exchange of credentials the stop waits for, as a token refresh is.
  it("the stop waits for the exchange before the root is let go, and the new tokens are activated", async () => {
    const waiting = gate();
    let instance = await start(
      new FakeTime(Date.now()),
      loggerOpening("credential exchanges under way", waiting),
    );
    const [held, release] = [gate(), gate()];
    try {
      const workspaceId = await bootstrapWorkspace(instance, "alice");
      const added = await add(instance, workspaceId, false);
      const { go_url } = (await added.json()) as { go_url: string };
      expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
      const { location, cookie } = await openGoUrl(
        instance,
        "alice",
        await startAgain(instance, workspaceId, "held"),
      );
      const back = new URL(String((await fetch(location, { redirect: "manual" })).headers.get("location")));
      scripted.beforeRequest = async (path) => {
        if (path !== "/token") return;
        held.open();
        await release.promise;
      };
      const browser = new AbortController();
      const landing = fetch(`${instance.url}${back.pathname}${back.search}`, {
        headers: { [TEST_USER_HEADER]: "alice", cookie },
        signal: browser.signal,
      }).catch(() => undefined);
      await held.promise;
      const closing = instance.atrium.close();
      browser.abort();
      await landing;
      const first = await Promise.race([
        closing.then(() => "the stop finished"),
        waiting.promise.then(() => "the stop waits for the exchange"),
      ]);
      release.open();
      await closing;
      expect(first).toBe("the stop waits for the exchange");
      instance = await instance.restart();
      expect(await connectionsOf(instance, workspaceId)).toMatchObject([
        { name: "held", state: "running", authorizationGeneration: 2 },
      ]);
    } finally {
      release.open();
      await instance.stop();
    }
  });
});
