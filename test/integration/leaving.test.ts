import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { addMember } from "../helpers/members.ts";
import {
  approveCode,
  mcpPost,
  obtainTokens,
  refreshTokens,
  sessionCookie,
  type Tokens,
  tokenRequest,
} from "../helpers/oauth.ts";

// Leaving a workspace ends what a person's MCP clients hold for it (issue 10, Security 7):
// before, a removed member's refresh token kept rotating, and re-adding them brought the old
// grant back without asking for consent again.

let t: TestAtrium;
let rest: TestAtrium["rest"];
const bobId = testPrincipal("bob").id;
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };

beforeAll(async () => {
  t = await startTestAtrium();
  rest = t.rest.bind(t);
  await bootstrapWorkspace(t, "orgadmin-olga");
  await bootstrapWorkspace(t, "bob");
});

afterAll(async () => {
  await t?.stop();
});

async function newWorkspace(owner: string): Promise<string> {
  const created = await t.rest(owner, "POST", "/v1/workspaces", { name: `${owner}'s team` });
  return ((await created.json()) as { id: string }).id;
}

/** Bob joins `ws` and lets an MCP client in: the client holds a working access and refresh token. */
async function bobConnects(ws: string): Promise<Tokens & { clientId: string }> {
  await addMember(rest, "alice", ws, "bob", { principalId: bobId });
  const tokens = await obtainTokens(t, "bob", ws);
  expect(tokens.refresh_token).toEqual(expect.any(String));
  expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(200);
  return tokens;
}

/**
 * Bob joins a new workspace of alice's and approves a client's authorization request; the code
 * is not redeemed until the test calls `redeem`.
 */
async function bobApprovesACode(): Promise<{ ws: string; redeem: () => Promise<Response> }> {
  const ws = await newWorkspace("alice");
  await addMember(rest, "alice", ws, "bob", { principalId: bobId });
  const exchange = await approveCode(t, await sessionCookie(t, "bob"), ws);
  return { ws, redeem: () => tokenRequest(t, exchange) };
}

async function expectEnded(ws: string, tokens: Tokens & { clientId: string }): Promise<void> {
  const refreshed = await refreshTokens(t, tokens);
  expect(refreshed.status).toBe(400);
  expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
  expect((await mcpPost(t, ws, tokens.access_token, listTools)).status).toBe(401);
}

describe("leaving a workspace ends its grants", () => {
  it("after removal and re-adding, the old refresh token is refused: the person consents again", async () => {
    const ws = await newWorkspace("alice");
    const tokens = await bobConnects(ws);
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bobId}`)).status).toBe(204);
    await expectEnded(ws, tokens);

    await addMember(rest, "alice", ws, "bob", { principalId: bobId });
    await expectEnded(ws, tokens);
    // A new consent gives a new grant, which works.
    const fresh = await obtainTokens(t, "bob", ws);
    expect((await mcpPost(t, ws, fresh.access_token, listTools)).status).toBe(200);
  });

  it("a code approved before removal and redeemed after it makes no grant", async () => {
    const { ws, redeem } = await bobApprovesACode();

    // Leaving revokes the grants that exist; this one did not exist yet.
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bobId}`)).status).toBe(204);
    const exchanged = await redeem();
    expect(exchanged.status).toBe(400);
    expect(((await exchanged.json()) as { error: string }).error).toBe("invalid_grant");
  });

  it("leaving yourself ends your grants there, and only there", async () => {
    const ws = await newWorkspace("alice");
    const other = await newWorkspace("alice");
    const leaving = await bobConnects(ws);
    const staying = await bobConnects(other);
    const alices = await obtainTokens(t, "alice", ws);

    expect((await t.rest("bob", "DELETE", `/v1/workspaces/${ws}/members/${bobId}`)).status).toBe(204);
    await expectEnded(ws, leaving);
    expect((await refreshTokens(t, staying)).status).toBe(200);
    expect((await refreshTokens(t, alices)).status).toBe(200);
  });

  it("archiving a workspace ends everyone's grants for it", async () => {
    const ws = await newWorkspace("alice");
    const bobs = await bobConnects(ws);
    const alices = await obtainTokens(t, "alice", ws);
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
    const refreshed = await refreshTokens(t, alices);
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await refreshTokens(t, bobs)).status).toBe(400);
  });

  it("deactivation ends all of the person's grants; reactivation does not bring them back", async () => {
    const ws = await newWorkspace("alice");
    const other = await newWorkspace("alice");
    const first = await bobConnects(ws);
    const second = await bobConnects(other);
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`)).status).toBe(200);
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`)).status).toBe(200);
    await expectEnded(ws, first);
    await expectEnded(other, second);
  });
  it("a code approved before a deactivation and redeemed after a reactivation makes no grant", async () => {
    const { ws, redeem } = await bobApprovesACode();

    // Deactivation revokes the grants that exist; this one did not exist yet, and the
    // reactivation comes within the code's 60 seconds.
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`)).status).toBe(200);
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`)).status).toBe(200);
    const exchanged = await redeem();
    expect(exchanged.status).toBe(400);
    expect(((await exchanged.json()) as { error: string }).error).toBe("invalid_grant");
    // A consent given now counts, from a sign-in since: the session from before the deactivation
    // is over too (ADR 0018).
    expect((await obtainTokens(t, "bob", ws)).refresh_token).toEqual(expect.any(String));
  });
});
