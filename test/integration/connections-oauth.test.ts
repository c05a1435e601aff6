import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool, connectionView } from "../helpers/connections.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";
import { type OAuthAtrium, startOAuthAtrium } from "../helpers/oauth-atrium.ts";
import { authorizeInBrowser, authorizeUntilCallback, deliverCallback } from "../helpers/oauth-browser.ts";
import type { OAuthRemoteServer } from "../helpers/oauth-remote-server.ts";

// OAuth connections end to end: Atrium as the OAuth client of a real OAuth-protected MCP server
// (an SDK server behind oidc-provider, test/helpers/oauth-remote-server.ts), with sign-in and
// consent driven in Chromium. One instance, one server; each test uses its own connection.

const TTL_SECONDS = 60;
const time = new FakeTime(Date.now());
let harness: OAuthAtrium;
let instance: TestAtrium;
let remote: OAuthRemoteServer;
let ws: string;

interface Started {
  go_url: string;
  expiresAt: string;
  connection: View;
}

interface View {
  name: string;
  state: string;
  authorizationGeneration: number;
  auth: { kind: string; scopes?: string[]; issuer?: string };
  snapshot: { version: number; tools: string[] } | null;
}

function browserAs(user: string) {
  return harness.browserAs(user);
}

async function add(name: string, auth: Record<string, unknown> = { kind: "oauth" }): Promise<Response> {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, { name, url: remote.url, auth });
}

async function start(name: string, user = "alice"): Promise<Response> {
  return instance.rest(user, "POST", `/v1/workspaces/${ws}/connections/${name}/oauth/start`);
}

function view(name: string): Promise<View> {
  return connectionView<View>(instance, ws, name);
}

function call(tool: string, args: Record<string, unknown> = {}) {
  return callTool(instance, ws, tool, args);
}

/** Adds an OAuth connection and authorizes it in a fresh browser as alice. */
async function connected(name: string): Promise<View> {
  const response = await add(name);
  expect(response.status).toBe(201);
  const { go_url } = (await response.json()) as Started;
  const { context, page } = await browserAs("alice");
  try {
    const landing = await authorizeInBrowser(page, go_url, { issuer: remote.issuer, login: "alice" });
    expect(landing.status).toBe(200);
  } finally {
    await context.close();
  }
  return view(name);
}

/** Signs in and consents at go_url as alice, holding the callback (oauth-browser.ts) to deliver later. */
function holdCallback(page: Page, goUrl: string): Promise<URL> {
  return authorizeUntilCallback(page, goUrl, { issuer: remote.issuer, login: "alice" });
}

function refreshes(): number {
  return remote.tokenRequestCounts().refresh_token ?? 0;
}

beforeAll(async () => {
  harness = await startOAuthAtrium("atrium-connections-oauth-", time, TTL_SECONDS);
  ({ instance, remote } = harness);
  ws = await bootstrapWorkspace(instance, "alice");
  // A second admin: one person's new start replaces their own pending flow (flows.ts), so flows
  // that race are two people's.
  await addMember(instance.rest, "alice", ws, "erin", { principalId: testPrincipal("erin").id }, "admin");
});

afterAll(async () => {
  await harness?.stop();
});

describe("connecting through the go_url", () => {
  it("adds in pending_auth with a go_url, and after sign-in and consent is running with snapshot 1", async () => {
    const response = await add("notes");
    expect(response.status).toBe(201);
    const started = (await response.json()) as Started;
    expect(started.go_url).toMatch(/\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32}$/);
    expect(started.connection).toMatchObject({
      state: "pending_auth",
      snapshot: null,
      auth: { kind: "oauth", issuer: remote.issuer },
    });
    expect((await call("notes__whoami")).isError).toBe(true);

    const { context, page } = await browserAs("alice");
    const landing = await authorizeInBrowser(page, started.go_url, { issuer: remote.issuer, login: "alice" });
    await context.close();
    expect(landing.status).toBe(200);
    expect(landing.url.pathname).toBe("/v1/connections/oauth/callback");

    const after = await view("notes");
    expect(after).toMatchObject({
      state: "running",
      authorizationGeneration: 1,
      auth: { kind: "oauth", scopes: ["read"], issuer: remote.issuer },
      snapshot: { version: 1 },
    });
    expect(after.snapshot?.tools.sort()).toEqual(["whoami", "write_note"]);
    const sent = remote.authorizationRequests().at(-1);
    expect(sent).toMatchObject({ codeChallengeMethod: "S256", resource: remote.url, scope: "read" });
  });

  it("calls the server's tool with the connection's token", async () => {
    const result = await call("notes__whoami");
    expect(result.isError).toBeFalsy();
    expect(remote.calls().at(-1)).toMatchObject({ tool: "whoami", scopes: ["read"] });
  });

  it("registers Atrium once per authorization server, whatever the number of connections", async () => {
    const before = remote.registrations();
    await connected("notes-two");
    expect(remote.registrations()).toBe(before);
  });

  it("serves no client ID metadata document at a loopback public URL (an authorization server could not fetch it)", async () => {
    const response = await instance.rest(null, "GET", "/connections/oauth/client-metadata.json");
    expect(response.status).toBe(404);
    expect(await response.text()).toContain("https");
  });

  it("never answers or logs a token", async () => {
    const requests = remote.tokenRequests();
    expect(requests.length).toBeGreaterThan(0);
    const status = await (
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/notes`)
    ).text();
    expect(status).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
    expect(JSON.stringify(harness.captured.lines)).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});

describe("refresh", () => {
  it("refreshes an expired access token once under 20 concurrent calls", async () => {
    await connected("busy");
    expect((await call("busy__whoami")).isError).toBeFalsy();
    const before = refreshes();
    await time.advance(TTL_SECONDS * 1000 + 1000);
    const results = await Promise.all(Array.from({ length: 20 }, () => call("busy__whoami")));
    expect(results.filter((result) => result.isError)).toEqual([]);
    expect(refreshes() - before).toBe(1);
    expect(remote.tokenRequests().at(-1)).toMatchObject({ grantType: "refresh_token", outcome: "ok" });
  });

  it("a refresh token revoked at the provider makes it reauth_required with a notification, tried once", async () => {
    await connected("revoked");
    expect((await call("revoked__whoami")).isError).toBeFalsy();
    await remote.revokeAllGrants();
    remote.expireAccessTokens();
    const before = refreshes();
    const refused = await call("revoked__whoami");
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toMatch(/re-authorize/);
    await eventually(async () => expect((await view("revoked")).state).toBe("reauth_required"), {
      timeout: 10_000,
    });
    await eventually(async () => {
      const inbox = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications`);
      const { notifications } = (await inbox.json()) as {
        notifications: { source: string; data?: unknown }[];
      };
      expect(notifications).toContainEqual(
        expect.objectContaining({ source: "connections", data: { connection: "revoked" } }),
      );
    });
    // Refused calls and time passing do not try the dead refresh token again.
    expect((await call("revoked__whoami")).content?.[0]?.text).toContain("has lapsed");
    await time.advance(TTL_SECONDS * 1000);
    await settle();
    expect(refreshes() - before).toBe(1);
    expect(remote.tokenRequests().filter((r) => r.outcome === "invalid_grant")).toHaveLength(1);
  });

  it("re-authorizing a lapsed connection brings it back at the next generation", async () => {
    const response = await start("revoked");
    expect(response.status).toBe(200);
    const { go_url } = (await response.json()) as Started;
    const { context, page } = await browserAs("alice");
    const landing = await authorizeInBrowser(page, go_url, { issuer: remote.issuer, login: "alice" });
    await context.close();
    expect(landing.status).toBe(200);
    expect(await view("revoked")).toMatchObject({ state: "running", authorizationGeneration: 2 });
    expect((await call("revoked__whoami")).isError).toBeFalsy();
  });
});

describe("only the newest authorization activates", () => {
  it("two admins' concurrent callbacks: exactly one activates, the other is told it was superseded", async () => {
    const first = (await (await add("tabs")).json()) as Started;
    const second = (await (await start("tabs", "erin")).json()) as Started;
    const [one, two] = [await browserAs("alice"), await browserAs("erin")];
    const heldOne = await holdCallback(one.page, first.go_url);
    const heldTwo = await holdCallback(two.page, second.go_url);
    const landings = await Promise.all([
      deliverCallback(one.page, heldOne),
      deliverCallback(two.page, heldTwo),
    ]);
    await one.context.close();
    await two.context.close();
    expect(landings.map((landing) => landing.status).sort()).toEqual([200, 409]);
    expect(landings.find((landing) => landing.status === 409)?.text).toContain("superseded");
    expect(await view("tabs")).toMatchObject({ state: "running", authorizationGeneration: 1 });
  });

  it("a callback from a flow started before the last activation is refused as stale", async () => {
    await connected("stale");
    const old = (await (await start("stale")).json()) as Started;
    const { context, page } = await browserAs("alice");
    const held = await holdCallback(page, old.go_url);
    const newer = (await (await start("stale", "erin")).json()) as Started;
    const other = await browserAs("erin");
    expect(
      (await authorizeInBrowser(other.page, newer.go_url, { issuer: remote.issuer, login: "erin" })).status,
    ).toBe(200);
    await other.context.close();
    const landing = await deliverCallback(page, held);
    await context.close();
    expect(landing.status).toBe(409);
    expect(landing.text).toContain("superseded");
    expect((await view("stale")).authorizationGeneration).toBe(2);
  });
});

describe("the callback's checks", () => {
  it("a wrong browser gets 403 and the flow stays usable; a replay then gets 400", async () => {
    const started = (await (await add("bound")).json()) as Started;
    const { context, page } = await browserAs("alice");
    const held = await holdCallback(page, started.go_url);
    const elsewhere = await browserAs("alice");
    const stranger = await deliverCallback(elsewhere.page, held);
    await elsewhere.context.close();
    expect(stranger.status).toBe(403);
    const owner = await deliverCallback(page, held);
    expect(owner.status).toBe(200);
    const replay = await deliverCallback(page, held);
    await context.close();
    expect(replay.status).toBe(400);
    expect((await view("bound")).state).toBe("running");
  });

  it("an admin demoted mid-flow cannot finish it: 403, and the flow is not spent", async () => {
    const carol = testPrincipal("carol").id;
    await addMember(instance.rest, "alice", ws, "carol", { principalId: carol }, "admin");
    const response = await instance.rest("carol", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "demoted-mid-flow",
      url: remote.url,
      auth: { kind: "oauth" },
    });
    expect(response.status).toBe(201);
    const started = (await response.json()) as Started;
    const { context, page } = await browserAs("carol");
    try {
      const held = await authorizeUntilCallback(page, started.go_url, {
        issuer: remote.issuer,
        login: "carol",
      });
      const setRole = (role: string) =>
        instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${carol}`, { role });
      expect((await setRole("member")).status).toBe(200);
      const refused = await deliverCallback(page, held);
      expect(refused.status).toBe(403);
      expect((await view("demoted-mid-flow")).state).toBe("pending_auth");
      // Made admin again, the same browser finishes the very same flow: the refusal did not spend it.
      expect((await setRole("admin")).status).toBe(200);
      expect((await deliverCallback(page, held)).status).toBe(200);
    } finally {
      await context.close();
    }
    expect((await view("demoted-mid-flow")).state).toBe("running");
  });

  it("a go_url opened by a workspace member who is not an admin is refused", async () => {
    await addMember(instance.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    const started = (await (await add("members-only")).json()) as Started;
    const { context, page } = await browserAs("bob");
    const response = await page.goto(started.go_url);
    await context.close();
    expect(response?.status()).toBe(403);
  });

  it.each([
    ["wrong", "is not the authorization server's"],
    ["missing", "is missing though the authorization server promised it"],
  ] as const)("a callback whose iss is %s is refused (%s)", async (issInResponse, _why) => {
    const name = `iss-${issInResponse}`;
    const started = (await (await add(name)).json()) as Started;
    remote.misbehave({ issInResponse });
    const { context, page } = await browserAs("alice");
    try {
      const landing = await authorizeInBrowser(page, started.go_url, {
        issuer: remote.issuer,
        login: "alice",
      });
      expect(landing.status).toBe(400);
      expect(await page.textContent("body")).toContain("RFC 9207");
    } finally {
      remote.misbehave({ issInResponse: "correct" });
      await context.close();
    }
    expect((await view(name)).state).toBe("pending_auth");
  });

  it("a callback after the flow expired is 400, and the connection stays pending", async () => {
    const started = (await (await add("late")).json()) as Started;
    const { context, page } = await browserAs("alice");
    const held = await holdCallback(page, started.go_url);
    await time.advance(10 * 60 * 1000 + 1000);
    const landing = await deliverCallback(page, held);
    await context.close();
    expect(landing.status).toBe(400);
    expect(landing.text).toContain("expired");
    expect((await view("late")).state).toBe("pending_auth");
    const refresh = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/connections/late/tools/refresh`,
    );
    expect(refresh.status).toBe(409);
  });

  it("an unknown state is 400", async () => {
    const response = await instance.rest(
      "alice",
      "GET",
      "/v1/connections/oauth/callback?state=nothing-like-it&code=x",
    );
    expect(response.status).toBe(400);
  });
});

describe("discovery refuses an authorization server it cannot trust", () => {
  it.each([
    ["metadata without S256", { omitS256: true }, "S256"],
    ["metadata whose issuer is not where it was fetched", { wrongIssuerInMetadata: true }, "another issuer"],
  ] as const)("refuses %s and stores nothing", async (_what, misbehaviour, says) => {
    const name = `untrusted-${Object.keys(misbehaviour)[0]?.toLowerCase()}`;
    remote.misbehave(misbehaviour);
    try {
      const response = await add(name);
      expect(response.status).toBe(400);
      expect(await response.text()).toContain(says);
    } finally {
      remote.misbehave({ omitS256: false, wrongIssuerInMetadata: false });
    }
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/${name}`)).status).toBe(
      404,
    );
  });

  it("bad scopes are refused by field", async () => {
    const response = await add("bad-scopes", { kind: "oauth", scopes: ["has space"] });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("auth.scopes");
  });
});

describe("step-up", () => {
  it("403 insufficient_scope answers a tool error with a go_url that asks for the union of scopes", async () => {
    await connected("stepper");
    const refused = await call("stepper__write_note", { text: "hello" });
    expect(refused.isError).toBe(true);
    const text = refused.content?.[0]?.text ?? "";
    expect(text).toContain("workspace admin must re-authorize");
    const goUrl = /(http:\/\/\S+\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32})/.exec(text)?.[1];
    expect(goUrl).toBeDefined();
    // Asked again before anyone re-authorized: the same go_url, not a flow per call.
    expect((await call("stepper__write_note", { text: "again" })).content?.[0]?.text).toContain(goUrl);
    const { context, page } = await browserAs("alice");
    const landing = await authorizeInBrowser(page, goUrl as string, {
      issuer: remote.issuer,
      login: "alice",
    });
    await context.close();
    expect(landing.status).toBe(200);
    expect(remote.authorizationRequests().at(-1)?.scope).toBe("read write");
    expect(await view("stepper")).toMatchObject({
      authorizationGeneration: 2,
      auth: { scopes: ["read", "write"] },
    });
    expect((await call("stepper__write_note", { text: "now" })).isError).toBeFalsy();
  });

  it("a step-up link left unused across a re-authorization is not handed out again", async () => {
    await connected("stale-step");
    const goUrlIn = (text: string | undefined) =>
      /(http:\/\/\S+\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32})/.exec(text ?? "")?.[1];
    const stale = goUrlIn((await call("stale-step__write_note", { text: "x" })).content?.[0]?.text);
    expect(stale).toBeDefined();
    // An admin re-authorizes another way meanwhile, for the same scopes: the step-up flow is now stale.
    const restarted = (await (await start("stale-step")).json()) as Started;
    const { context, page } = await browserAs("alice");
    try {
      expect(
        (await authorizeInBrowser(page, restarted.go_url, { issuer: remote.issuer, login: "alice" })).status,
      ).toBe(200);
      const fresh = goUrlIn((await call("stale-step__write_note", { text: "x" })).content?.[0]?.text);
      expect(fresh).toBeDefined();
      expect(fresh).not.toBe(stale);
      const landing = await authorizeInBrowser(page, fresh as string, {
        issuer: remote.issuer,
        login: "alice",
      });
      expect(landing.status).toBe(200);
    } finally {
      await context.close();
    }
    expect((await call("stale-step__write_note", { text: "now" })).isError).toBeFalsy();
  });
});

describe("a new public URL (last: it restarts the instance)", () => {
  it("keeps refreshing each connection as the client its tokens were issued to", async () => {
    await connected("moved");
    const before = (await call("moved__whoami")).structuredContent as { clientId: string };
    // A new public URL is a new redirect URI, so a new registration at the server; the refresh
    // token stays bound to the client it was issued to.
    instance = await harness.restart({ publicUrl: "http://127.0.0.1:8788" });
    remote.expireAccessTokens();
    const refreshed = refreshes();
    const after = await call("moved__whoami");
    expect(after.isError).toBeFalsy();
    expect(after.structuredContent).toMatchObject({ clientId: before.clientId });
    expect(refreshes() - refreshed).toBe(1);
    expect(remote.tokenRequests().at(-1)).toMatchObject({ grantType: "refresh_token", outcome: "ok" });
    expect((await view("moved")).state).toBe("running");
  });
});
