import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapWorkspace, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import type { FakeTime } from "../helpers/fake-time.ts";
import { HOUR_MS, startFakeTimeAtrium } from "../helpers/fake-time-atrium.ts";
import {
  approveCode,
  LIST_TOOLS,
  mcpPost,
  obtainTokens,
  refreshTokens,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";

// What a person began before a deactivation stays over after the reactivation (ADR 0018, 0027);
// the order is the standing id the profile's last reactivation drew, not the wall clock (ADR 0169,
// amended later still). Compared by stamps, a clock stepped back after a
// reactivation locked the person out of sign-in and OAuth until the clock passed the reactivation
// (review 52), and a reactivation stamped before an old session or consent let it back in.

const bobId = testPrincipal("bob").id;

let time: FakeTime;
let t: TestAtrium;
let ws: string;

beforeEach(async () => {
  ({ time, t } = await startFakeTimeAtrium("2026-12-07T09:00:00Z"));
  await bootstrapWorkspace(t, "orgadmin-olga");
  ws = await bootstrapWorkspace(t, "bob");
  // Bob's membership is stamped well before every step below; a join and a clock step back are
  // test/integration/membership-clock-step-back.test.ts's.
  time.jump(3 * HOUR_MS);
});

afterEach(async () => {
  await t?.stop();
});

async function deactivateAndReactivateBob(): Promise<void> {
  expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`)).status).toBe(200);
  expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`)).status).toBe(200);
}

function bootstrapWith(cookie: string): Promise<Response> {
  return fetch(`${t.url}/v1/bootstrap`, { headers: { cookie } });
}

describe("a reactivation and a clock stepped back", () => {
  it("a person reactivated just before the clock is stepped back signs in and lets a client in at once", async () => {
    await deactivateAndReactivateBob();
    time.jump(-HOUR_MS);
    const cookie = await sessionCookie(t, "bob");
    expect((await bootstrapWith(cookie)).status).toBe(200);
    const tokens = await obtainTokens(t, "bob", ws, { cookie });
    expect((await mcpPost(t, ws, tokens.access_token, LIST_TOOLS)).status).toBe(200);
    const refreshed = await refreshTokens(t, tokens);
    expect(refreshed.status).toBe(200);
  });

  it("a session and a code from before a deactivation stay refused when the reactivation is stamped before them, across a restart", async () => {
    const cookie = await sessionCookie(t, "bob");
    const exchange = await approveCode(t, cookie, ws);

    time.jump(-HOUR_MS);
    await deactivateAndReactivateBob();
    t = await t.restart();

    expect((await bootstrapWith(cookie)).status).toBe(401);
    const exchanged = await tokenRequest(t, exchange);
    expect(exchanged.status).toBe(400);
    expect(await exchanged.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/deactivated since/),
    });
  });
});
