import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// The public OAuth endpoints that read a body cap it themselves (413 in the OAuth shape); the
// metadata, JWKS and protected-resource paths read none and keep the instance's cap. Skipped too,
// a body sent to them was drained (up to 64 MiB, @hono/node-server's drainIncoming) and answered
// 404, where docs/rest.md promises 413 from the declared Content-Length before a byte is read.
let t: TestAtrium;
let accepted = 0;
beforeAll(async () => {
  t = await startTestAtrium({ maxBodyBytes: 4096 });
});
afterAll(async () => {
  await t?.stop();
});

const BODY = 8 * 1024 * 1024;

/** Sends a POST with a BODY-byte body, then a GET on the same connection; the status lines seen. `accepted`: bytes the server took. */
function postThenGet(path: string): Promise<string[]> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve) => {
    let seen = "";
    const done = () => {
      socket.destroy();
      resolve(seen.split("\r\n").filter((line) => line.startsWith("HTTP/1.1")));
    };
    const socket = connect(Number(port), hostname, async () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Length: ${BODY}\r\n\r\n`);
      const chunk = Buffer.alloc(1024 * 1024, 120);
      let sent = 0;
      for (; sent < BODY && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r));
      }
      accepted = sent;
      if (!socket.destroyed) socket.write(`GET /v1/health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    });
    socket.on("data", (chunk) => {
      seen += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", done);
    setTimeout(done, 15_000);
  });
}

it("an ordinary path refuses the body 413 and reads none of it", async () => {
  const lines = await postThenGet("/v1/workspaces");
  expect(accepted).toBeLessThan(BODY);
  expect(lines[0]).toContain(" 413 ");
  expect(lines).toHaveLength(1);
});

for (const path of [
  "/oauth/jwks",
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-protected-resource/mcp/ws_x",
]) {
  it(`a body over http.maxBodyBytes to ${path} is refused 413, not read whole`, async () => {
    const lines = await postThenGet(path);
    expect(lines[0]).toContain(" 413 ");
    expect(lines).toHaveLength(1);
  }, 20_000);
}
