import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { addMember, invite } from "../helpers/members.ts";
import { sessionCookie } from "../helpers/oauth.ts";

let t: TestAtrium;
let ws: string;
let rest: TestAtrium["rest"];

beforeAll(async () => {
  t = await startTestAtrium();
  rest = t.rest.bind(t);
  // bob and carol have signed in; nobody has ever signed in as "stranger".
  for (const name of ["bob", "carol"]) expect((await t.rest(name, "GET", "/v1/workspaces")).status).toBe(200);
});

afterAll(async () => {
  await t?.stop();
});

beforeEach(async () => {
  // Each test starts with nobody holding an invitation from an earlier one.
  for (const name of ["bob", "carol"]) {
    for (const { id } of await pendingFor(name)) await t.rest(name, "POST", `/v1/invitations/${id}/decline`);
  }
  const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "Alice's project" });
  ws = ((await created.json()) as { id: string }).id;
});

async function memberIds(workspaceId: string): Promise<string[]> {
  const body = (await (await t.rest("alice", "GET", `/v1/workspaces/${workspaceId}/members`)).json()) as {
    members: Array<{ principalId: string }>;
  };
  return body.members.map((m) => m.principalId);
}

async function pendingFor(name: string): Promise<Array<{ id: string; workspaceName: string }>> {
  const response = await t.rest(name, "GET", "/v1/invitations");
  expect(response.status).toBe(200);
  return ((await response.json()) as { invitations: Array<{ id: string; workspaceName: string }> })
    .invitations;
}

/** The answer with the fields that differ by nature (its id, its times) normalised. */
async function normalised(response: Response): Promise<string> {
  const text = await response.text();
  return `${response.status} ${response.headers.get("content-type")} ${text
    .replace(/inv_[0-9a-f]{32}/g, "inv_ID")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "TIME")}`;
}

describe("inviting", () => {
  it("answers a known and an unknown email alike, and repeats only what it was sent", async () => {
    const answers = [];
    for (const path of ["invitations", "members"]) {
      const known = await t.rest("alice", "POST", `/v1/workspaces/${ws}/${path}`, {
        email: "bob@example.test",
      });
      const unknown = await t.rest("alice", "POST", `/v1/workspaces/${ws}/${path}`, {
        email: "bib@example.test",
      });
      expect(known.status, path).toBe(201);
      const knownText = await normalised(known);
      expect(knownText.replace("bob@", "bib@"), path).toBe(await normalised(unknown));
      // Nothing the directory knows about bob (his name, his id) is in the answer.
      expect(knownText, path).not.toContain(testPrincipal("bob").id);
      expect(knownText, path).not.toMatch(/"bob"|displayName/);
      answers.push(knownText);
      // Taken back, so the next path may invite the same two again (one pending each per workspace).
      for (const { id } of (await (await t.rest("alice", "GET", `/v1/workspaces/${ws}/invitations`)).json())
        .invitations as Array<{ id: string }>) {
        expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/invitations/${id}`)).status).toBe(204);
      }
    }
    // POST …/members is POST …/invitations, answer for answer (ADR 0027).
    expect(answers[1]).toBe(answers[0]);
  });

  it("answers a known and an unknown principal id alike", async () => {
    const bobId = testPrincipal("bob").id;
    const strangerId = testPrincipal("stranger").id;
    const known = await t.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, { principalId: bobId });
    const unknown = await t.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, {
      principalId: strangerId,
    });
    expect(known.status).toBe(201);
    expect((await normalised(known)).replace(bobId, strangerId)).toBe(await normalised(unknown));
  });

  it("refuses a non-admin, a bad role and a body that names nobody", async () => {
    await addMember(rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    const byMember = await t.rest("bob", "POST", `/v1/workspaces/${ws}/invitations`, {
      email: "carol@example.test",
    });
    expect(byMember.status).toBe(403);
    expect((await t.rest("bob", "GET", `/v1/workspaces/${ws}/invitations`)).status).toBe(403);
    expect(await pendingFor("carol")).toEqual([]);
    for (const body of [
      { email: "carol@example.test", role: "owner" },
      { name: "carol" },
      { email: "carol" },
    ]) {
      const response = await t.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    // A stranger to the workspace meets its 404, not a 403 that would confirm it.
    const stranger = await t.rest("carol", "POST", `/v1/workspaces/${ws}/invitations`, {
      email: "x@example.test",
    });
    expect(stranger.status).toBe(404);
  });
});

describe("what an admin may not send", () => {
  async function refusal(response: Response): Promise<string> {
    return `${response.status} ${((await response.json()) as { error: { code: string } }).error.code}`;
  }

  it("an invitation to a member, or to themselves, is 409 member_exists, by id or by address", async () => {
    await addMember(rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    for (const body of [
      { principalId: testPrincipal("bob").id },
      { email: "BOB@example.test" },
      { principalId: testPrincipal("alice").id, role: "admin" },
      { email: "alice@example.test" },
    ]) {
      for (const path of ["invitations", "members"]) {
        const response = await t.rest("alice", "POST", `/v1/workspaces/${ws}/${path}`, body);
        expect(await refusal(response), `${path} ${JSON.stringify(body)}`).toBe("409 member_exists");
      }
    }
    const self = await t.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, {
      principalId: testPrincipal("alice").id,
    });
    expect(((await self.json()) as { error: { message: string } }).error.message).toMatch(
      /^You are already a member/,
    );
    expect(await pendingFor("bob")).toEqual([]);
  });

  it("a second pending invitation for the same person to the same workspace is 409 invitation_exists", async () => {
    const first = await invite(rest, "alice", ws, { email: "carol@example.test" });
    const again = await t.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, {
      email: "Carol@Example.test",
      role: "admin",
    });
    expect(await refusal(again)).toBe("409 invitation_exists");
    // Another workspace's invitation is another; this one's may be sent again once revoked.
    const other = (
      (await (await t.rest("alice", "POST", "/v1/workspaces", { name: "Other" })).json()) as {
        id: string;
      }
    ).id;
    await invite(rest, "alice", other, { email: "carol@example.test" });
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/invitations/${first.id}`)).status).toBe(
      204,
    );
    await invite(rest, "alice", ws, { email: "carol@example.test" }, "admin");
    expect((await pendingFor("carol")).map((i) => i.workspaceName).sort()).toEqual([
      "Alice's project",
      "Other",
    ]);
  });
});

describe("an invitation's sender", () => {
  /** `alice` makes `sender` an admin of ws; the sender invites `invitee` as admin. */
  async function sentByAdmin(sender: string, invitee: string): Promise<string> {
    await addMember(rest, "alice", ws, sender, { principalId: testPrincipal(sender).id }, "admin");
    return (await invite(rest, sender, ws, { principalId: testPrincipal(invitee).id }, "admin")).id;
  }

  async function acceptAs(invitee: string, id: string): Promise<number> {
    return (await t.rest(invitee, "POST", `/v1/invitations/${id}/accept`)).status;
  }

  it("removed, leaving, demoted or deactivated, takes their pending invitations with them", async () => {
    const removed = await sentByAdmin("mallory-removed", "mallory-alt-1");
    const left = await sentByAdmin("mallory-left", "mallory-alt-2");
    const demoted = await sentByAdmin("mallory-demoted", "mallory-alt-3");
    const deactivated = await sentByAdmin("mallory-deactivated", "mallory-alt-4");
    const id = (name: string) => testPrincipal(name).id;
    expect(
      (await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${id("mallory-removed")}`)).status,
    ).toBe(204);
    expect(
      (await t.rest("mallory-left", "DELETE", `/v1/workspaces/${ws}/members/${id("mallory-left")}`)).status,
    ).toBe(204);
    const demote = await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${id("mallory-demoted")}`, {
      role: "member",
    });
    expect(demote.status).toBe(200);
    const deactivate = await t.rest(
      "orgadmin-olga",
      "POST",
      `/v1/users/${id("mallory-deactivated")}/deactivate`,
    );
    expect(deactivate.status).toBe(200);
    expect(await t.rest("alice", "GET", `/v1/workspaces/${ws}/invitations`).then((r) => r.json())).toEqual({
      invitations: [],
    });
    for (const [invitee, invitation] of [
      ["mallory-alt-1", removed],
      ["mallory-alt-2", left],
      ["mallory-alt-3", demoted],
      ["mallory-alt-4", deactivated],
    ] as const) {
      expect(await pendingFor(invitee), invitee).toEqual([]);
      expect(await acceptAs(invitee, invitation), invitee).toBe(404);
    }
    // Promoted again, the demoted sender's old invitation does not come back.
    await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${id("mallory-demoted")}`, {
      role: "admin",
    });
    expect(await acceptAs("mallory-alt-3", demoted)).toBe(404);
    expect(t.atrium.workspaces.roleOf(ws, id("mallory-alt-3"))).toBeUndefined();
  });

  it("is checked when the invitation is answered, whatever took their role away", async () => {
    const invitation = await sentByAdmin("mallory", "mallory-alt");
    // Behind the routes' back, so nothing revoked the invitation: the answer itself must refuse.
    await t.atrium.workspaces.removeMember(ws, testPrincipal("mallory").id, testPrincipal("alice").id);
    const accepted = await t.rest("mallory-alt", "POST", `/v1/invitations/${invitation}/accept`);
    const unknown = await t.rest(
      "mallory-alt",
      "POST",
      "/v1/invitations/inv_0123456789abcdef0123456789abcdef/accept",
    );
    expect(accepted.status).toBe(404);
    expect(await accepted.text()).toBe(await unknown.text());
    expect(t.atrium.workspaces.roleOf(ws, testPrincipal("mallory-alt").id)).toBeUndefined();
  });

  it("is checked again by the acceptance's own write: a demotion landing after the first check still refuses it", async () => {
    const invitation = await sentByAdmin("mallory-racing", "mallory-racing-alt");
    const store = t.atrium.workspaces;
    const addMember = store.addMember;
    // The sender's demotion lands after the answer's first check, just before the member is
    // written. (A removal cannot land there: it waits for the workspace's invitation key, which
    // the acceptance holds, ADR 0131.)
    store.addMember = async (...args) => {
      store.addMember = addMember;
      await store.setRole(ws, testPrincipal("mallory-racing").id, "member", testPrincipal("alice").id);
      return addMember.apply(store, args);
    };
    try {
      expect(await acceptAs("mallory-racing-alt", invitation)).toBe(404);
    } finally {
      store.addMember = addMember;
    }
    expect(store.roleOf(ws, testPrincipal("mallory-racing-alt").id)).toBeUndefined();
    // Refused for good: the invitation went with its sender's role.
    await store.setRole(ws, testPrincipal("mallory-racing").id, "admin", testPrincipal("alice").id);
    expect(await acceptAs("mallory-racing-alt", invitation)).toBe(404);
    expect(await pendingFor("mallory-racing-alt")).toEqual([]);
  });
});

describe("the invitee", () => {
  it("sees nothing of the workspace but its name until they accept, and then is a member", async () => {
    const invitation = await invite(rest, "alice", ws, { email: "bob@example.test" }, "admin");
    const mine = await pendingFor("bob");
    expect(mine).toEqual([
      {
        id: invitation.id,
        workspaceName: "Alice's project",
        role: "admin",
        invitedBy: "alice",
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
      },
    ]);
    expect(JSON.stringify(mine)).not.toContain(ws);

    const nowhere = await t.rest("bob", "GET", "/v1/workspaces/ws_0123456789abcdef");
    const nowhereBody = await nowhere.text();
    for (const path of [
      `/v1/workspaces/${ws}`,
      `/v1/workspaces/${ws}/members`,
      `/v1/workspaces/${ws}/files`,
    ]) {
      const response = await t.rest("bob", "GET", path);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).toBe(nowhereBody);
    }
    await expect(t.mcpClient("bob", ws)).rejects.toMatchObject({ name: "SdkHttpError", status: 404 });

    const accepted = await t.rest("bob", "POST", `/v1/invitations/${invitation.id}/accept`);
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as { workspace: unknown }).workspace).toMatchObject({
      id: ws,
      role: "admin",
      mcpUrl: `${t.url}/mcp/${ws}`,
    });
    expect(t.atrium.workspaces.roleOf(ws, testPrincipal("bob").id)).toBe("admin");
    expect((await (await t.mcpClient("bob", ws)).listTools()).tools.length).toBeGreaterThan(0);
    expect(await pendingFor("bob")).toEqual([]);
    expect((await t.rest("bob", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(404);
  });

  it("declining, a revoked invitation and someone else's acceptance make nobody a member", async () => {
    const declined = await invite(rest, "alice", ws, { principalId: testPrincipal("bob").id });
    const revoked = await invite(rest, "alice", ws, { email: "bob@example.test" });
    const carols = await invite(rest, "alice", ws, { email: "carol@example.test" });

    // Not bob's to answer: carol's by email, and an id that does not exist, are one 404.
    const notHis = await t.rest("bob", "POST", `/v1/invitations/${carols.id}/accept`);
    expect(notHis.status).toBe(404);
    const unknown = await t.rest(
      "bob",
      "POST",
      "/v1/invitations/inv_0123456789abcdef0123456789abcdef/accept",
    );
    expect(await notHis.text()).toBe(await unknown.text());

    const listed = await t.rest("alice", "GET", `/v1/workspaces/${ws}/invitations`);
    expect(
      ((await listed.json()) as { invitations: Array<{ id: string }> }).invitations.map((i) => i.id),
    ).toEqual([declined.id, revoked.id, carols.id]);
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/invitations/${revoked.id}`)).status).toBe(
      204,
    );
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/invitations/${revoked.id}`)).status).toBe(
      404,
    );
    expect((await t.rest("bob", "POST", `/v1/invitations/${revoked.id}/accept`)).status).toBe(404);
    expect((await t.rest("bob", "POST", `/v1/invitations/${declined.id}/decline`)).status).toBe(204);
    expect((await t.rest("bob", "POST", `/v1/invitations/${declined.id}/accept`)).status).toBe(404);

    expect(await memberIds(ws)).toEqual([testPrincipal("alice").id]);
    expect((await t.rest("bob", "GET", `/v1/workspaces/${ws}`)).status).toBe(404);
    expect(await pendingFor("bob")).toEqual([]);
    expect((await pendingFor("carol")).map((i) => i.id)).toEqual([carols.id]);
  });

  it("an invitation to someone who has never signed in waits for their first sign-in", async () => {
    const invitation = await invite(rest, "alice", ws, { email: "newcomer@example.test" });
    expect((await pendingFor("newcomer")).map((i) => i.id)).toEqual([invitation.id]);
    expect((await t.rest("newcomer", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(200);
    expect(await memberIds(ws)).toContain(testPrincipal("newcomer").id);
  });

  it("an archived workspace's invitations are gone", async () => {
    const invitation = await invite(rest, "alice", ws, { email: "carol@example.test" });
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
    expect(await pendingFor("carol")).toEqual([]);
    expect((await t.rest("carol", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(404);
  });
});

describe("the home page", () => {
  /** A home-page form post from this browser, redirects not followed. */
  const submit = (cookie: string, path: string, fields: Record<string, string> = {}, origin = t.url) =>
    fetch(`${t.url}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });

  it("shows a pending invitation, and accepting or declining there answers it", async () => {
    const cookie = await sessionCookie(t, "carol");
    const first = await invite(rest, "alice", ws, { principalId: testPrincipal("carol").id });
    const home = await t.rest(null, "GET", "/", undefined, { cookie });
    const page = await home.text();
    expect(page).toContain("Alice&#39;s project");
    expect(page).toContain(`action="/invitations/${first.id}"`);
    expect(page).not.toContain(`/mcp/${ws}`);

    const accepted = await submit(cookie, `/invitations/${first.id}`, { decision: "accept" });
    expect(accepted.status).toBe(303);
    expect(accepted.headers.get("location")).toBe("/");
    expect(await memberIds(ws)).toContain(testPrincipal("carol").id);
    expect(await (await t.rest(null, "GET", "/", undefined, { cookie })).text()).toContain(`/mcp/${ws}`);

    // From another origin the same form changes nothing.
    const second = await t.rest("alice", "POST", "/v1/workspaces", { name: "Second" });
    const secondWs = ((await second.json()) as { id: string }).id;
    const other = await invite(rest, "alice", secondWs, { principalId: testPrincipal("carol").id });
    const forged = await submit(
      cookie,
      `/invitations/${other.id}`,
      { decision: "accept" },
      "http://127.0.0.1:1",
    );
    expect(forged.status).toBe(403);
    expect(t.atrium.workspaces.roleOf(secondWs, testPrincipal("carol").id)).toBeUndefined();
    expect((await submit(cookie, `/invitations/${other.id}`, { decision: "maybe" })).status).toBe(400);
    expect((await submit(cookie, `/invitations/${other.id}`, { decision: "decline" })).status).toBe(303);
    expect(t.atrium.workspaces.roleOf(secondWs, testPrincipal("carol").id)).toBeUndefined();
    expect(await pendingFor("carol")).toEqual([]);
  });

  it("isolates the workspace's and the inviter's names, so right-to-left text reorders nothing around them", async () => {
    const cookie = await sessionCookie(t, "carol");
    const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "שלום עולם" });
    const rtl = ((await created.json()) as { id: string }).id;
    const invitation = await invite(rest, "alice", rtl, { principalId: testPrincipal("carol").id });
    const invited = await (await t.rest(null, "GET", "/", undefined, { cookie })).text();
    expect(invited).toContain("<dt><bdi>שלום עולם</bdi></dt>");
    expect(invited).toContain(`<bdi>${testPrincipal("alice").displayName}</bdi> invites you as member`);
    await submit(cookie, `/invitations/${invitation.id}`, { decision: "accept" });
    expect(await (await t.rest(null, "GET", "/", undefined, { cookie })).text()).toContain(
      "<dt><bdi>שלום עולם</bdi></dt><dd>",
    );
  });

  it("an answer not sent as the page's form is refused with 415, never a 500, and answers nothing", async () => {
    const cookie = await sessionCookie(t, "carol");
    const invitation = await invite(rest, "alice", ws, { principalId: testPrincipal("carol").id });
    for (const contentType of ["multipart/form-data", "multipart/form-data; boundary=zz", "text/plain"]) {
      const response = await fetch(`${t.url}/invitations/${invitation.id}`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin: t.url, "content-type": contentType },
        body: "decision=accept",
      });
      expect(response.status, contentType).toBe(415);
    }
    expect((await pendingFor("carol")).map((i) => i.id)).toEqual([invitation.id]);
    expect(await memberIds(ws)).not.toContain(testPrincipal("carol").id);
    expect((await submit(cookie, `/invitations/${invitation.id}`, { decision: "decline" })).status).toBe(303);
  });

  it("leaves a workspace, and the last admin is told why they cannot", async () => {
    const cookie = await sessionCookie(t, "bob");
    await addMember(rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
    const home = await (await t.rest(null, "GET", "/", undefined, { cookie })).text();
    expect(home).toContain(`action="/workspaces/${ws}/leave"`);
    const left = await submit(cookie, `/workspaces/${ws}/leave`);
    expect(left.status).toBe(303);
    expect(await memberIds(ws)).toEqual([testPrincipal("alice").id]);
    // Gone is gone: a second try is the workspace's one 404.
    expect((await submit(cookie, `/workspaces/${ws}/leave`)).status).toBe(404);

    const aliceCookie = await sessionCookie(t, "alice");
    const lastAdmin = await submit(aliceCookie, `/workspaces/${ws}/leave`);
    expect(lastAdmin.status).toBe(409);
    expect(await lastAdmin.text()).toContain("at least one admin");
    expect(await memberIds(ws)).toEqual([testPrincipal("alice").id]);
  });
});
