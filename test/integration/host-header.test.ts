import { request } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// docs/configuration.md, http.publicUrl: only its host (and loopback names) are accepted in
// `Host`. The Host header is compared as HTTP compares authorities (RFC 9110 §4.2.3, RFC 3986
// §6.2.2-3): the name is case-insensitive and the scheme's default port, explicit or not, is the
// same authority, as a proxy that forwards the client's Host as sent (nginx `$http_host`) passes
// it on. Everything else is still refused (src/http/middleware/origin-guard.ts).
let t: TestAtrium;
beforeAll(async () => {
  t = await startTestAtrium({ dev: true, publicUrl: "https://atrium.example.com" });
});
afterAll(async () => {
  await t?.stop();
});

function statusFor(host: string, path = "/v1/bootstrap"): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: t.atrium.port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

it("accepts the public host however HTTP lets it be spelt", async () => {
  for (const host of [
    "atrium.example.com",
    "Atrium.Example.COM",
    "atrium.example.com:443",
    "ATRIUM.EXAMPLE.COM:443",
    "localhost",
    "127.0.0.1:8080",
    "[::1]",
  ]) {
    expect({ host, status: await statusFor(host) }).toEqual({ host, status: 200 });
  }
});

// Node's own parser answers 400 for some of these (userinfo) before Atrium sees them; the guard's
// own answer for each is pinned in test/unit/http/middleware/origin-guard.test.ts.
it("refuses another host, another port, userinfo, a path and a trailing dot", async () => {
  for (const host of [
    "other.example.com",
    "atrium.example.com.evil.example",
    "atrium.example.com:8443",
    "atrium.example.com:80",
    "atrium.example.com.",
    "evil.example@atrium.example.com",
    "atrium.example.com@evil.example",
    "evil.example@localhost",
    "localhost/evil",
    "atrium.example.com:443@evil.example",
  ]) {
    const status = await statusFor(host);
    expect({ host, refused: status === 403 || status === 400 }).toEqual({ host, refused: true });
  }
});

it("answers /v1/health for any Host, so a load balancer can probe it by address", async () => {
  expect(await statusFor("10.0.0.7:8080", "/v1/health")).toBe(200);
  expect(await statusFor("other.example.com", "/v1/health")).toBe(200);
});
