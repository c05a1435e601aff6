import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// docs/oauth.md: the public OAuth endpoints answer CORS for any origin and their errors, 413
// included, use the OAuth shape. The instance's body limit (http.maxBodyBytes) leaves their bodies
// to their own caps, taken at the lower of the two (http/middleware/body-limit.ts), so a body over
// http.maxBodyBytes is refused in the OAuth shape with Access-Control-Allow-Origin, which a
// browser-based client can read and an OAuth client library can parse.
let t: TestAtrium;
beforeAll(async () => {
  // An operator who lowers http.maxBodyBytes below the registration cap (64 KiB).
  t = await startTestAtrium({ maxBodyBytes: 4096 });
});
afterAll(async () => {
  await t?.stop();
});

it("an oversized registration is refused in the OAuth shape, with CORS", async () => {
  const body = JSON.stringify({
    redirect_uris: ["http://127.0.0.1/callback"],
    client_name: "app",
    contacts: Array.from({ length: 10 }, (_, i) => `${"a".repeat(600)}${i}@example.com`),
  });
  expect(body.length).toBeGreaterThan(4096);
  expect(body.length).toBeLessThan(64 * 1024);
  const answer = await fetch(`${t.url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: "https://client.example" },
    body,
  });
  expect(answer.status).toBe(413);
  expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  const error = (await answer.json()) as Record<string, unknown>;
  expect(typeof error.error).toBe("string");
  expect(typeof error.error_description).toBe("string");
});

it("a token request over http.maxBodyBytes is refused in the OAuth shape, with CORS", async () => {
  const answer = await fetch(`${t.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://client.example" },
    body: `grant_type=refresh_token&refresh_token=${"r".repeat(8000)}`,
  });
  expect(answer.status).toBe(413);
  expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  expect(((await answer.json()) as Record<string, unknown>).error).toBeTypeOf("string");
});

it("a chunked revocation over http.maxBodyBytes is refused in the OAuth shape, with CORS", async () => {
  const chunks = [`token=${"t".repeat(3000)}`, "t".repeat(3000)];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(new TextEncoder().encode(next));
    },
  });
  const answer = await fetch(`${t.url}/oauth/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://client.example" },
    body,
    duplex: "half",
  } as RequestInit);
  expect(answer.status).toBe(413);
  expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  expect(((await answer.json()) as Record<string, unknown>).error).toBe("invalid_request");
});

it("a REST body over http.maxBodyBytes is still refused in the REST shape", async () => {
  const answer = await t.rest("alice", "POST", "/v1/workspaces", { name: "x".repeat(5000) });
  expect(answer.status).toBe(413);
  expect(((await answer.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
});
