import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchTarget } from "../../../bench/lib/bench-target.ts";
import type { ChildServer } from "../../../bench/lib/child-server.ts";
import { formatTable } from "../../../bench/lib/format-table.ts";
import { OutputTail } from "../../../bench/lib/output-tail.ts";
import { buildResults, type TargetResult } from "../../../bench/lib/results.ts";

// A server that serves only the 2025 era, as Atrium does until the 2026-07-28 front lands: the
// bench must measure its 2025 row and report the 2026 row as failed, not stop.

let http: ServerType;
let url: string;

beforeAll(async () => {
  const app = new Hono();
  app.post("/mcp", async (c) => {
    if (c.req.header("mcp-protocol-version") === "2026-07-28")
      return c.json({ jsonrpc: "2.0", id: 1, error: { code: -32022, message: "unsupported version" } }, 400);
    return c.json({ jsonrpc: "2.0", id: 1, result: { content: [], structuredContent: { id: "fl_1" } } });
  });
  http = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
  await once(http, "listening");
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});

afterAll(() => {
  http.close();
});

/** The in-process server stands in for a child: nothing to stop, no CPU figure. */
function inProcessServer(): ChildServer {
  return {
    name: "only-2025",
    output: new OutputTail(),
    exited: () => undefined,
    cpuUs: () => undefined,
    dispose: async () => {},
    disposeNow: () => {},
  };
}

describe("benchTarget in both eras", () => {
  let rows: TargetResult[];

  beforeAll(async () => {
    rows = await benchTarget(
      {
        key: "atrium",
        // The bench's progress lines name this label on stderr, so they read as the test's own.
        label: "only-2025 stand-in",
        start: async () => ({
          key: "atrium",
          server: inProcessServer(),
          call: { url, tool: "files__info", arguments: { id: "fl_1" } },
        }),
      },
      { connections: 2, warmupSeconds: 1, seconds: 1 },
    );
  });

  it("measures the era the server serves and reports the other as a failed row", () => {
    expect(rows.map((row) => row.era)).toEqual(["2025-11-25", "2026-07-28"]);
    expect(rows[0]?.stats?.totalRequests).toBeGreaterThan(0);
    expect(rows[0]?.error).toBeUndefined();
    expect(rows[1]?.stats).toBeUndefined();
    expect(rows[1]?.error).toContain("HTTP 400");
  });

  it("the table shows the failed row and why, and no ratio for an era without both rows", () => {
    const results = buildResults(0, { connections: 2, warmupSeconds: 1, seconds: 1 }, rows, []);
    expect(results.targets).toHaveLength(2);
    expect(results.eras["2026-07-28"].ratios).toEqual({});
    const table = formatTable(results);
    expect(table).toMatch(/only-2025 stand-in\s+2026-07-28\s+files__info\s+failed/);
    expect(table).toContain("only-2025 stand-in 2026-07-28 failed: files__info (2026-07-28)");
  });
});
