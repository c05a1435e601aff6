import { afterAll, beforeAll, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { withFsHook } from "../helpers/fs-hook.ts";
import { approveCode, mcpPost, sessionCookie, tokenRequest } from "../helpers/oauth.ts";

// A token request whose write meets a full disk is answered `503 temporarily_unavailable` with
// Retry-After, "nothing stored; try again" (ADR 0165). A code's exchange writes the code redeemed
// before it writes the grant; when only the grant's write failed (the code's record is the smaller
// write, and comes first), the client's retry with the same code was taken for a replay:
// invalid_grant, the never-stored grant id revoked, and "redeemed twice" logged as a security
// warning. A redemption whose grant was never stored now does not count (ADR 0016).

const REPLAYED = "an authorization code was redeemed twice; the grant it started is revoked";
const captured = capturingLogger("warn");
const time = new FakeTime(Date.now());
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
let instance: TestAtrium;
let ws: string;
beforeAll(async () => {
  instance = await startTestAtrium({ log: captured.log, clock: time.clock });
  ws = await bootstrapWorkspace(instance, "alice");
});
afterAll(async () => {
  await instance?.close();
});

const full = () => Object.assign(new Error("ENOSPC: no space left on device, open"), { code: "ENOSPC" });

async function approvedCodeExchange(): Promise<Record<string, string>> {
  const exchange = await approveCode(instance, await sessionCookie(instance, "alice"), ws);
  return { ...exchange, resource: `${instance.url}/mcp/${ws}` };
}

it("a code exchange answered 503 'try again' because only its grant's write met a full disk succeeds when tried again after Retry-After; the code is then spent", async () => {
  const form = await approvedCodeExchange();
  // Only the grant's own file meets the full disk: the code's record was written redeemed.
  const first = await withFsHook(
    "open",
    (real) =>
      (path, ...rest) =>
        String(path).includes("/oauth/families/") ? Promise.reject(full()) : real(path, ...rest),
    () => tokenRequest(instance, form),
  );
  expect(first.status).toBe(503);
  expect(first.headers.get("retry-after")).toBe("60");
  expect(((await first.json()) as { error: string }).error).toBe("temporarily_unavailable");

  // Space freed; the client tries again, as told, once Retry-After has passed: past the code's 60 s.
  await time.advance(61_000);
  const again = await tokenRequest(instance, form);
  const text = await again.text();
  expect(again.status, text).toBe(200);
  expect(captured.lines.map((line) => line.msg)).not.toContain(REPLAYED);
  const tokens = JSON.parse(text) as { access_token: string; refresh_token: string };
  expect(tokens.refresh_token).toEqual(expect.any(String));
  expect((await mcpPost(instance, ws, tokens.access_token, listTools)).status).toBe(200);

  // The grant is stored now: the same code once more is a replay, and revokes it.
  const replay = await tokenRequest(instance, form);
  expect(replay.status).toBe(400);
  expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
  expect(captured.lines.map((line) => line.msg)).toContain(REPLAYED);
  expect((await mcpPost(instance, ws, tokens.access_token, listTools)).status).toBe(401);
});
