import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { headWithoutBody } from "../../../../src/http/middleware/head-without-body.ts";
import type { AppEnv } from "../../../../src/web/app-env.ts";

// A GET route that streams, reached by a HEAD: hono drops the body it gets back. Whatever the
// stream opened must be released (its cancel called), and the HEAD keeps the GET's headers.

function streamingApp(guarded: boolean, cancelled: { count: number }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  if (guarded) app.use("*", headWithoutBody());
  app.get("/stream", () => {
    const body = new ReadableStream<Uint8Array>({
      pull: () => new Promise(() => undefined),
      cancel: () => {
        cancelled.count++;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return app;
}

describe("headWithoutBody", () => {
  it("cancels the body a HEAD's GET route opened, keeping its status and headers", async () => {
    const cancelled = { count: 0 };
    const response = await streamingApp(true, cancelled).request("/stream", { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.body).toBeNull();
    expect(cancelled.count).toBe(1);
  });

  it("is needed: without it the dropped body is never cancelled", async () => {
    const cancelled = { count: 0 };
    await streamingApp(false, cancelled).request("/stream", { method: "HEAD" });
    expect(cancelled.count).toBe(0);
  });

  it("leaves a GET's body alone", async () => {
    const cancelled = { count: 0 };
    const response = await streamingApp(true, cancelled).request("/stream");
    expect(response.body).not.toBeNull();
    expect(cancelled.count).toBe(0);
    await response.body?.cancel();
  });
});
