import { access, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { UNUSED_CLIENT_KEPT_MS } from "../../src/oauth/clients.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import {
  authorize,
  consentRequestId,
  decide,
  obtainTokens,
  pkcePair,
  registerClient,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";

// ADR 0137: the hourly housekeeping deletes registered clients that hold no live grant and have
// not been used for 30 days; their client_id then gets invalid_client at the token endpoint and
// a "no such client" page at the authorization endpoint. A client with a live grant stays.

const DAY_MS = 24 * 60 * 60 * 1000;

describe("housekeeping sweeps registered clients", { timeout: 60_000 }, () => {
  it("a client unused for 30 days is swept; one holding a grant still refreshes", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const { log, lines } = capturingLogger();
    // Grants outlive the 30 days here, so one is still live when the sweep comes.
    const t = await startTestAtrium({
      clock: time.clock,
      timers: time.timers,
      log,
      sections: { oauth: { refreshTokenTtlSeconds: 90 * 24 * 3600 } },
    });
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const idle = (await registerClient(t)).client_id;
    const tokens = await obtainTokens(t, "alice", ws);
    const refreshWith = (clientId: string, refreshToken: string) =>
      tokenRequest(t, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });
    // Known, so an unknown refresh token is the answer, not an unknown client.
    expect(
      (
        (await (await refreshWith(idle, "gnt_0123456789abcdef0123456789abcdef.x")).json()) as {
          error: string;
        }
      ).error,
    ).toBe("invalid_grant");

    time.jump(31 * DAY_MS);
    await time.advance(61 * 60 * 1000);
    // Watched in the log, not by asking.
    const swept = () =>
      lines.filter((line) => String(line.msg).startsWith("registered oauth clients unused"));
    await expect.poll(swept, { timeout: 10_000 }).toEqual([expect.objectContaining({ swept: 1 })]);
    const answer = await refreshWith(idle, "gnt_0123456789abcdef0123456789abcdef.x");
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { error: string }).error).toBe("invalid_client");
    const page = await authorize(t, await sessionCookie(t, "alice"), {
      clientId: idle,
      workspaceId: ws,
      challenge: pkcePair().challenge,
    });
    expect(page.status).toBe(400);
    const text = await page.text();
    expect(text).toContain("is registered here; the application must register again");
    expect(text).toContain(idle);

    const refreshed = await refreshWith(tokens.clientId, tokens.refresh_token as string);
    expect(refreshed.status).toBe(200);
  });
});

describe("what keeps a registered client from the sweep", { timeout: 60_000 }, () => {
  /** A client_id's record is still stored. */
  const storedIn = (t: { root: string }, id: string) =>
    access(join(t.root, "_instance", "oauth", "clients", `${id}.json`)).then(
      () => true,
      () => false,
    );

  it("naming a client is not a use: named signed out, and at the token endpoint without a code, it is swept 30 days after it registered", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const t = await startTestAtrium({ clock: time.clock, timers: time.timers });
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const id = (await registerClient(t)).client_id;
    time.jump(29 * DAY_MS);
    // A stranger: no session, no code of its own. Before, each of these was a use of the client,
    // and a few requests a month kept a flood's clients, and oauth.maxUnusedClients, full for ever.
    const exchange = await tokenRequest(t, {
      grant_type: "authorization_code",
      code: "not-a-code",
      client_id: id,
      code_verifier: pkcePair().verifier,
    });
    expect(((await exchange.json()) as { error: string }).error).toBe("invalid_grant");
    const signedOut = await authorize(t, undefined, {
      clientId: id,
      workspaceId: ws,
      challenge: pkcePair().challenge,
    });
    expect(signedOut.status).toBe(303);
    time.jump(DAY_MS);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, id)).toBe(false);
  });

  it("a consent given keeps a client 30 days from then; showing its page does not", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const t = await startTestAtrium({ clock: time.clock, timers: time.timers });
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const shown = (await registerClient(t)).client_id;
    const consented = (await registerClient(t)).client_id;
    time.jump(29 * DAY_MS);
    const cookie = await sessionCookie(t, "alice");
    const pageOf = (clientId: string) =>
      authorize(t, cookie, { clientId, workspaceId: ws, challenge: pkcePair().challenge });
    expect((await pageOf(shown)).status).toBe(200);
    const page = await pageOf(consented);
    const approved = await decide(t, cookie, consentRequestId(await page.text()), "approve");
    expect(approved.status).toBe(303);
    time.jump(2 * DAY_MS);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, shown)).toBe(false);
    expect(await storedIn(t, consented)).toBe(true);
    time.jump(28 * DAY_MS);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, consented)).toBe(false);
  });

  it("a client swept while its consent page is open gets no code, and the person is told to register again", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const t = await startTestAtrium({ clock: time.clock, timers: time.timers });
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const id = (await registerClient(t)).client_id;
    time.jump(UNUSED_CLIENT_KEPT_MS);
    const cookie = await sessionCookie(t, "alice");
    const page = await authorize(t, cookie, {
      clientId: id,
      workspaceId: ws,
      challenge: pkcePair().challenge,
    });
    expect(page.status).toBe(200);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, id)).toBe(false);
    // Before, the code was issued for an id nobody knew any more, and its exchange was invalid_client.
    const approved = await decide(t, cookie, consentRequestId(await page.text()), "approve");
    expect(approved.status).toBe(400);
    expect(approved.headers.get("location")).toBeNull();
    expect(await approved.text()).toContain("the application must register again");
  });

  it("a redeemed refresh token keeps a client 30 days after its grant ends", async ({ onTestFinished }) => {
    const time = new FakeTime();
    const t = await startTestAtrium({
      clock: time.clock,
      timers: time.timers,
      sections: { oauth: { refreshTokenTtlSeconds: 90 * 24 * 3600 } },
    });
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const tokens = await obtainTokens(t, "alice", ws);
    time.jump(29 * DAY_MS);
    const refreshed = await tokenRequest(t, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
      client_id: tokens.clientId,
    });
    expect(refreshed.status).toBe(200);
    const { refresh_token: latest } = (await refreshed.json()) as { refresh_token: string };
    const revoked = await fetch(`${t.url}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: latest, client_id: tokens.clientId }).toString(),
    });
    expect(revoked.status).toBe(200);
    time.jump(2 * DAY_MS);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, tokens.clientId)).toBe(true);
    time.jump(28 * DAY_MS);
    await t.atrium.oauth.sweepClients();
    expect(await storedIn(t, tokens.clientId)).toBe(false);
  });

  it("a refresh whose client use cannot be recorded still answers the rotated refresh token", async ({
    onTestFinished,
  }) => {
    const t = await startTestAtrium();
    onTestFinished(() => t.stop());
    const ws = await bootstrapWorkspace(t, "alice");
    const tokens = await obtainTokens(t, "alice", ws);
    // The client's record unreadable at that moment (an I/O error): the token is already rotated.
    const recordUse = vi.spyOn(t.atrium.oauth.clients, "recordUse").mockRejectedValue(new Error("EIO"));
    onTestFinished(() => recordUse.mockRestore());
    const refreshed = await tokenRequest(t, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
      client_id: tokens.clientId,
    });
    expect(recordUse).toHaveBeenCalled();
    expect(refreshed.status).toBe(200);
    expect(((await refreshed.json()) as { refresh_token?: string }).refresh_token).toBeTypeOf("string");
  });
});

describe("a use whose write failed", { timeout: 60_000 }, () => {
  const NOT_RECORDED = "a registered oauth client's last use could not be recorded; its next use tries again";
  /**
   * `work` with every write of a client record failing, as a disk's error does: the new file's
   * flush fails, so it is never renamed into place. Not a read-only folder: for root that took
   * `chattr +i`, refused without CAP_LINUX_IMMUTABLE (Docker's default), and the tests failed.
   */
  const withClientWritesFailing = (folder: string, work: () => Promise<unknown>) =>
    journalDuring(work, {
      sync: (path) =>
        path.startsWith(`${folder}/`)
          ? Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })
          : undefined,
    });

  it("is written by the graceful stop, so the next process does not sweep a client used then", async ({
    onTestFinished,
  }) => {
    const time = new FakeTime();
    const { log, lines } = capturingLogger();
    const first = await startTestAtrium({ clock: time.clock, timers: time.timers, log });
    onTestFinished(() => first.stop());
    const id = (await registerClient(first)).client_id;
    const folder = join(first.root, "_instance", "oauth", "clients");
    time.jump(2 * DAY_MS);
    const usedAt = time.clock();
    // The disk refuses the use's write; the request still gets its client.
    await withClientWritesFailing(folder, async () => {
      expect(await first.atrium.oauth.clients.recordUse(id)).toBe(true);
    });
    expect(lines.filter((line) => line.msg === NOT_RECORDED)).toHaveLength(1);

    await first.close();
    // Before, the use lived only in memory and was lost here: the record kept its registration.
    const record = JSON.parse(await readFile(join(folder, `${id}.json`), "utf8")) as { lastUsedAt: number };
    expect(record.lastUsedAt).toBe(usedAt);

    // 31 days after it registered, 29 after that use: the next process keeps it.
    time.jump(29 * DAY_MS);
    const next = await first.restart();
    onTestFinished(() => next.close());
    await next.atrium.oauth.sweepClients();
    await expect(access(join(folder, `${id}.json`))).resolves.toBeUndefined();
  });

  it("one the stop cannot write either is logged, and the stop finishes", async ({ onTestFinished }) => {
    const time = new FakeTime();
    const { log, lines } = capturingLogger();
    const t = await startTestAtrium({ clock: time.clock, timers: time.timers, log });
    onTestFinished(() => t.stop());
    const id = (await registerClient(t)).client_id;
    const folder = join(t.root, "_instance", "oauth", "clients");
    time.jump(2 * DAY_MS);
    await withClientWritesFailing(folder, async () => {
      await t.atrium.oauth.clients.recordUse(id);
      await t.close();
    });
    expect(
      lines.filter((line) => String(line.msg).includes("could not be written at the stop either")),
    ).toEqual([expect.objectContaining({ clientId: id })]);
    expect(lines.filter((line) => line.msg === "shutdown finished")).toHaveLength(1);
  });
});
