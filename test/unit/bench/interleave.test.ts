import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rotate, runInterleaved } from "../../../bench/lib/interleave.ts";
import { preflight } from "../../../bench/lib/preflight.ts";
import { rpcRequest } from "../../../bench/lib/rpc-request.ts";

// Two stand-in targets in one process: one answers ping, one refuses the 2026 era as a server
// that does not speak it would. The interleaved run must measure the first and report the second
// as failed with its answer, not stop.

let http: ServerType;
let base: string;

beforeAll(async () => {
  const app = new Hono();
  app.post("/ok", (c) => c.json({ jsonrpc: "2.0", id: 1, result: {} }));
  app.post("/refuses", (c) =>
    c.json({ jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found" } }, 404),
  );
  http = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterAll(() => {
  http.close();
});

function target(path: string) {
  const url = `${base}${path}`;
  const request = rpcRequest({ url, method: "ping" }, "2026-07-28");
  return {
    id: path,
    spec: { url, request, cpuUs: () => undefined },
    preflight: () => preflight(url, request, path),
  };
}

describe("interleaved rounds", () => {
  it("measure every target that answers and report the one that does not with its answer", async () => {
    const outcomes = await runInterleaved([target("/ok"), target("/refuses")], {
      connections: 2,
      warmupSeconds: 0.3,
      seconds: 0.6,
      rounds: 2,
    });
    const ok = outcomes.get("/ok");
    expect(ok?.error).toBeUndefined();
    expect(ok?.stats?.totalRequests).toBeGreaterThan(0);
    expect(ok?.stats?.p99Ms).toBeGreaterThanOrEqual(ok?.stats?.p50Ms ?? Number.POSITIVE_INFINITY);
    expect(outcomes.get("/refuses")?.error).toContain("HTTP 404");
  });

  it("rotate starts each round one target later and keeps every target", () => {
    expect(rotate(["a", "b", "c"], 0)).toEqual(["a", "b", "c"]);
    expect(rotate(["a", "b", "c"], 1)).toEqual(["b", "c", "a"]);
    expect(rotate(["a", "b", "c"], 4)).toEqual(["b", "c", "a"]);
    expect(rotate([], 3)).toEqual([]);
  });
});
