import { describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, startTestAtrium } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  authorize,
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
    // Watched in the log, not by asking: a request naming the client is a use of it.
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
