import { getEventListeners } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { discoverOAuthProtectedResourceMetadata, refreshAuthorization } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { formBodies } from "../../../src/platform/connections/oauth/tokens.ts";
import { guardedFetch, RedirectRefused } from "../../../src/sources/guarded-fetch.ts";

// A server on 127.0.0.1 that sends its headers and the first bytes of a body, then stalls.

let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

async function stallingServer(contentType: string, firstBytes: string): Promise<string> {
  const open = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    request.resume();
    open.add(response);
    response.writeHead(200, { "content-type": contentType });
    response.write(firstBytes);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

const limits = { allowPrivate: true, timeoutMs: 300, maxResponseBytes: 1024 * 1024 };

describe("guardedFetch", () => {
  it("cuts an answer whose body stalls after its headers, at the deadline", async () => {
    const url = await stallingServer("application/json", '{"access_token":');
    const started = Date.now();
    const response = await guardedFetch(limits)(url, { method: "POST", body: "grant_type=refresh_token" });
    await expect(response.text()).rejects.toThrow(/did not answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("leaves no listener on the caller's signal once an answer is over, and honours one aborted before", async () => {
    const server = createServer((request, response) => {
      request.resume();
      response.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const lifelong = new AbortController();
    const fetchOnce = guardedFetch(limits);
    for (let i = 0; i < 20; i++) {
      const answer = await fetchOnce(url, {
        method: "POST",
        body: "x".repeat(10_000),
        signal: lifelong.signal,
      });
      expect(await answer.json()).toEqual({ ok: true });
    }
    // The last request's socket close comes a turn after its body.
    await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(lifelong.signal, "abort")).toHaveLength(0);

    await expect(fetchOnce(url, { signal: AbortSignal.abort(new Error("gone already")) })).rejects.toThrow(
      "gone already",
    );
  });

  it("holds an event stream to the deadline too, unless event streams are let stay open", async () => {
    const url = await stallingServer("text/event-stream", "data: {}\n\n");
    const held = await guardedFetch(limits)(url);
    await expect(held.text()).rejects.toThrow(/did not answer within/);

    const open = await guardedFetch({ ...limits, eventStreams: true })(url);
    const reader = (open.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const next = await Promise.race([
      reader.read().then(
        () => "read",
        () => "cut",
      ),
      new Promise((resolve) => setTimeout(() => resolve("still open"), 100)),
    ]);
    expect(next).toBe("still open");
    await reader.cancel();
  });

  it("fails at a redirect, and the client library's OAuth helpers, which follow one within the origin, follow none", async () => {
    const moved: string[] = [];
    const server = createServer((request, response) => {
      request.resume();
      if (request.url?.startsWith("/moved")) {
        moved.push(`${request.method} ${request.url}`);
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else response.writeHead(307, { location: `/moved${request.url}` }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const fetchGuarded = guardedFetch(limits);

    const refused = await fetchGuarded(`${origin}/mcp`, { method: "POST", body: "{}" }).catch(
      (error) => error,
    );
    expect(refused).toBeInstanceOf(RedirectRefused);
    expect(refused.message).toBe(
      `${origin} answered HTTP 307, a redirect, which Atrium does not follow; if the server moved, use the URL it moved to.`,
    );
    await expect(
      refreshAuthorization(origin, {
        metadata: {
          issuer: origin,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          response_types_supported: ["code"],
        },
        clientInformation: { client_id: "atrium", client_secret: "the-secret" },
        refreshToken: "the-refresh-token",
        // As Atrium's token requests send it (oauth/tokens.ts).
        fetchFn: formBodies(fetchGuarded),
      }),
    ).rejects.toThrow(/a redirect, which Atrium does not follow/);
    await expect(discoverOAuthProtectedResourceMetadata(`${origin}/mcp`, {}, fetchGuarded)).rejects.toThrow(
      /a redirect, which Atrium does not follow/,
    );
    expect(moved).toEqual([]);
  });
});
