import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { callTool } from "../helpers/connections.ts";
import { eventually } from "../helpers/eventually.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { addMember } from "../helpers/members.ts";
import { type OAuthAtrium, startOAuthAtrium } from "../helpers/oauth-atrium.ts";
import { authorizeInBrowser, authorizeUntilCallback, deliverCallback } from "../helpers/oauth-browser.ts";
import type { OAuthRemoteServer } from "../helpers/oauth-remote-server.ts";

// Personal connections behind OAuth (ADR 0042 with 0040/0041): bob, a member of alice's
// workspace, connects his own OAuth-protected server. The flow is his alone — alice, the admin,
// cannot open its go_url nor re-authorize it — and its tools are served to him as my_<name>__….

const time = new FakeTime(Date.now());
const bob = testPrincipal("bob").id;
let harness: OAuthAtrium;
let instance: TestAtrium;
let remote: OAuthRemoteServer;
let ws: string;

interface Started {
  go_url: string;
  expiresAt: string;
  connection: { name: string; state: string; personal?: boolean; grant?: string; snapshot: unknown };
}

function addPersonal(user: string, name: string): Promise<Response> {
  return instance.rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: remote.url,
    personal: true,
    auth: { kind: "oauth" },
  });
}

async function viewOf(user: string, name: string): Promise<Response> {
  return instance.rest(user, "GET", `/v1/workspaces/${ws}/connections/${name}`);
}

/** Opens `goUrl` in a fresh browser signed in to Atrium as `user`, signs in at the provider as `user`. */
async function authorizeAs(user: string, goUrl: string) {
  const { context, page } = await harness.browserAs(user);
  try {
    return await authorizeInBrowser(page, goUrl, { issuer: remote.issuer, login: user });
  } finally {
    await context.close();
  }
}

/** What `user` gets opening `goUrl` in their own browser (no following to the provider). */
async function openAs(user: string, goUrl: string): Promise<{ status: number; text: string }> {
  const { context, page } = await harness.browserAs(user);
  try {
    const response = await page.goto(goUrl);
    return { status: response?.status() ?? 0, text: (await page.textContent("body")) ?? "" };
  } finally {
    await context.close();
  }
}

beforeAll(async () => {
  harness = await startOAuthAtrium("atrium-connections-oauth-personal-", time, 60);
  ({ instance, remote } = harness);
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
});

afterAll(async () => {
  await harness?.stop();
});

describe("a personal OAuth connection", () => {
  let goUrl: string;

  it("is added by a member in pending_auth with a go_url, invisible to the admin", async () => {
    const response = await addPersonal("bob", "notes");
    expect(response.status).toBe(201);
    const started = (await response.json()) as Started;
    expect(started.go_url).toMatch(/\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32}$/);
    // Pending first, though bob shares the workspace and holds no grant yet: authorizing comes first.
    expect(started.connection).toMatchObject({
      name: "my_notes",
      personal: true,
      state: "pending_auth",
      grant: "needed",
      snapshot: null,
    });
    goUrl = started.go_url;
    expect((await viewOf("alice", "my_notes")).status).toBe(404);
    // Nothing to refresh before the owner authorizes it; the answer says who must.
    const refresh = await instance.rest(
      "bob",
      "POST",
      `/v1/workspaces/${ws}/connections/my_notes/tools/refresh`,
    );
    expect(refresh.status).toBe(409);
    expect(await refresh.text()).toContain("its owner opens its go_url");
  });

  it("connections__add says the go_url is for its owner alone", async () => {
    const added = await callTool(
      instance,
      ws,
      "connections__add",
      { name: "by-tool", url: remote.url, personal: true, auth: { kind: "oauth" } },
      "bob",
    );
    expect(added.isError).toBeFalsy();
    expect(added.content?.[0]?.text).toContain("you (its owner, and nobody else) open");
    expect(added.content?.[0]?.text).not.toContain("workspace admin");
  });

  it("bad scopes are refused by field and nothing is stored", async () => {
    const response = await instance.rest("bob", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "bad",
      url: remote.url,
      personal: true,
      auth: { kind: "oauth", scopes: ["has space"] },
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("auth.scopes");
    expect((await viewOf("bob", "my_bad")).status).toBe(404);
  });

  it("refuses its go_url to a workspace admin who is not its owner, and the flow stays usable", async () => {
    const opened = await openAs("alice", goUrl);
    expect(opened.status).toBe(403);
    expect(opened.text).toContain("Only the owner of this personal connection");
  });

  it("its owner removed from the workspace mid-flow cannot finish it: 403", async () => {
    const dave = testPrincipal("dave").id;
    await addMember(instance.rest, "alice", ws, "dave", { principalId: dave });
    const started = (await (await addPersonal("dave", "leaving")).json()) as Started;
    const { context, page } = await harness.browserAs("dave");
    try {
      const held = await authorizeUntilCallback(page, started.go_url, {
        issuer: remote.issuer,
        login: "dave",
      });
      expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${dave}`)).status).toBe(
        204,
      );
      const landing = await deliverCallback(page, held);
      expect(landing.status).toBe(403);
      expect(landing.text).toContain("member");
    } finally {
      await context.close();
    }
  });

  it("connects through the owner's go_url and is called as my_notes__… once an admin grants it", async () => {
    const landing = await authorizeAs("bob", goUrl);
    expect(landing.status).toBe(200);
    const view = (await (await viewOf("bob", "my_notes")).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ state: "needs_grant", grant: "needed", snapshot: { version: 1 } });
    const granted = await callTool(
      instance,
      ws,
      "connections__grant",
      { principalId: bob, connection: "my_notes" },
      "alice",
    );
    expect(granted.isError).toBeFalsy();
    const result = await callTool(instance, ws, "my_notes__whoami", {}, "bob");
    expect(result.isError).toBeFalsy();
    expect(remote.calls().at(-1)).toMatchObject({ tool: "whoami", sub: "bob", scopes: ["read"] });
    // The admin is not served it at all.
    expect((await callTool(instance, ws, "my_notes__whoami", {}, "alice")).isError).toBe(true);
  });

  it("re-authorization by anyone but the owner answers exactly as a connection that does not exist", async () => {
    const path = (name: string) => `/v1/workspaces/${ws}/connections/${name}/oauth/start`;
    const theirs = await instance.rest("alice", "POST", path("my_notes"));
    const nobodys = await instance.rest("alice", "POST", path("my_nothing"));
    expect(theirs.status).toBe(404);
    expect(nobodys.status).toBe(404);
    expect((await theirs.text()).replaceAll("my_notes", "X")).toBe(
      (await nobodys.text()).replaceAll("my_nothing", "X"),
    );
    const tool = await callTool(instance, ws, "connections__authorize", { name: "my_notes" }, "alice");
    const none = await callTool(instance, ws, "connections__authorize", { name: "my_nothing" }, "alice");
    expect(tool.isError).toBe(true);
    expect(tool.content?.[0]?.text.replaceAll("my_notes", "X")).toBe(
      none.content?.[0]?.text.replaceAll("my_nothing", "X"),
    );
  });

  it("is re-authorized by its owner (the same browser rules), at the next generation", async () => {
    const response = await instance.rest(
      "bob",
      "POST",
      `/v1/workspaces/${ws}/connections/my_notes/oauth/start`,
    );
    expect(response.status).toBe(200);
    const { go_url } = (await response.json()) as Started;
    expect((await openAs("alice", go_url)).status).toBe(403);
    expect((await authorizeAs("bob", go_url)).status).toBe(200);
    expect(await (await viewOf("bob", "my_notes")).json()).toMatchObject({
      state: "running",
      authorizationGeneration: 2,
    });
  });

  it("step-up on insufficient_scope says its owner must re-authorize, with a go_url only the owner opens", async () => {
    const refused = await callTool(instance, ws, "my_notes__write_note", { text: "hi" }, "bob");
    expect(refused.isError).toBe(true);
    const text = refused.content?.[0]?.text ?? "";
    expect(text).toContain("its owner must re-authorize");
    expect(text).not.toContain("workspace admin");
    const stepUrl = /(http:\/\/\S+\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32})/.exec(text)?.[1] as string;
    expect(stepUrl).toBeDefined();
    expect((await openAs("alice", stepUrl)).status).toBe(403);
    expect((await authorizeAs("bob", stepUrl)).status).toBe(200);
    expect(remote.authorizationRequests().at(-1)?.scope).toBe("read write");
    expect(
      (await callTool(instance, ws, "my_notes__write_note", { text: "now" }, "bob")).isError,
    ).toBeFalsy();
  });

  it("two members' personal connections of one name keep their own tokens", async () => {
    const started = (await (await addPersonal("alice", "notes")).json()) as Started;
    expect((await openAs("bob", started.go_url)).status).toBe(403);
    expect((await authorizeAs("alice", started.go_url)).status).toBe(200);
    await callTool(
      instance,
      ws,
      "connections__grant",
      { principalId: testPrincipal("alice").id, connection: "my_notes" },
      "alice",
    );
    expect((await callTool(instance, ws, "my_notes__whoami", {}, "alice")).isError).toBeFalsy();
    expect(remote.calls().at(-1)).toMatchObject({ tool: "whoami", sub: "alice" });
    expect((await callTool(instance, ws, "my_notes__whoami", {}, "bob")).isError).toBeFalsy();
    expect(remote.calls().at(-1)).toMatchObject({ tool: "whoami", sub: "bob" });
  });

  it("a refresh token refused is reauth_required, notified to the owner alone", async () => {
    await remote.revokeAllGrants();
    remote.expireAccessTokens();
    const refused = await callTool(instance, ws, "my_notes__whoami", {}, "bob");
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toContain("its owner must re-authorize");
    await eventually(
      async () =>
        expect(await (await viewOf("bob", "my_notes")).json()).toMatchObject({ state: "reauth_required" }),
      { timeout: 10_000 },
    );
    const entry = expect.objectContaining({
      source: "connections",
      to: bob,
      data: { connection: "my_notes" },
    });
    await eventually(async () => {
      const inbox = await instance.rest("bob", "GET", `/v1/workspaces/${ws}/notifications`);
      expect(((await inbox.json()) as { notifications: unknown[] }).notifications).toContainEqual(entry);
    });
    const alices = (await (
      await instance.rest("alice", "GET", `/v1/workspaces/${ws}/notifications`)
    ).json()) as {
      notifications: { to?: string }[];
    };
    expect(alices.notifications.filter((n) => n.to === bob)).toEqual([]);
  });
});
