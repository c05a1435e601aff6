import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import type { FakeTime } from "../helpers/fake-time.ts";
import { HOUR_MS, startFakeTimeAtrium } from "../helpers/fake-time-atrium.ts";
import { addMember } from "../helpers/members.ts";
import {
  approveCode,
  LIST_TOOLS,
  mcpPost,
  obtainTokens,
  refreshTokens,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";

// A consent counts only while its person is a member who has not left the workspace since
// (ADR 0027, 0089); "since" is the membership id each join draws at random, which the consent
// records, not the member's `addedAt` against the consent's time (ADR 0169, amended).
// Compared by stamps, a person added just before a clock step back could not let a client into
// the workspace until the clock passed `addedAt`, and a removal and re-add stamped before an old
// consent let that consent back in.

const bobId = testPrincipal("bob").id;

let time: FakeTime;
let t: TestAtrium;
let ws: string;

beforeEach(async () => {
  ({ time, t } = await startFakeTimeAtrium("2026-12-07T09:00:00Z"));
  ws = await bootstrapWorkspace(t, "alice");
  await bootstrapWorkspace(t, "bob");
  time.jump(3 * HOUR_MS);
});

afterEach(async () => {
  await t?.stop();
});

function addBob(): Promise<void> {
  return addMember(t.rest.bind(t), "alice", ws, "bob", { principalId: bobId });
}

async function removeBob(): Promise<void> {
  expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bobId}`)).status).toBe(204);
}

describe("a membership and a clock stepped back", () => {
  it("a person added just before the clock is stepped back lets a client into the workspace at once", async () => {
    await addBob();
    time.jump(-HOUR_MS);
    const tokens = await obtainTokens(t, "bob", ws);
    expect((await mcpPost(t, ws, tokens.access_token, LIST_TOOLS)).status).toBe(200);
    const refreshed = await refreshTokens(t, tokens);
    expect(refreshed.status).toBe(200);
  });

  it("a code approved before a removal stays refused when the re-add is stamped before it, across a restart", async () => {
    await addBob();
    const exchange = await approveCode(t, await sessionCookie(t, "bob"), ws);

    time.jump(-HOUR_MS);
    await removeBob();
    await addBob();
    t = await t.restart();

    const exchanged = await tokenRequest(t, exchange);
    expect(exchanged.status).toBe(400);
    expect(await exchanged.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/left it since/),
    });
  });

  it("a grant consented while a member stays refused after a removal and a re-add stamped before it, across a restart", async () => {
    await addBob();
    const tokens = await obtainTokens(t, "bob", ws);
    time.jump(-HOUR_MS);
    await removeBob();
    await addBob();
    t = await t.restart();

    const refreshed = await refreshTokens(t, tokens);
    expect(refreshed.status).toBe(400);
    expect((await mcpPost(t, ws, tokens.access_token, LIST_TOOLS)).status).toBe(401);
    // A new consent, under the new membership, works.
    const fresh = await obtainTokens(t, "bob", ws);
    expect((await mcpPost(t, ws, fresh.access_token, LIST_TOOLS)).status).toBe(200);
  });
});
