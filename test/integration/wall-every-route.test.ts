import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalisePath } from "../../scripts/lib/route-docs.mjs";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// Every REST route under /v1/workspaces/:ws and the MCP POST, as hono registered them, asked by a
// stranger: one identical 404, whatever the method, the rest of the path or the workspace
// (Alice's, or none at all). (Every other method of /mcp/:ws answers 405 for every id alike.)

let instance: TestAtrium;
let aliceWs: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  aliceWs = await bootstrapWorkspace(instance, "alice");
  await bootstrapWorkspace(instance, "mallory");
});

afterAll(async () => {
  await instance?.stop();
});

/** A concrete path for a route: the workspace in its `:ws` slot, a plausible value in every other. */
function concrete(path: string, ws: string): string {
  return path
    .split("/")
    .map((segment) => {
      if (segment === ":ws") return ws;
      if (segment.startsWith(":")) return segment.includes("id") ? "fl_000000000000000000000000" : "x";
      return segment;
    })
    .join("/");
}

describe("a stranger gets one 404 from every workspace route", () => {
  it("every such route, every method, for a real workspace and for one that does not exist", async () => {
    const named = instance.atrium.routes.filter(
      (route) =>
        route.path.startsWith("/v1/workspaces/:ws") || (route.path === "/mcp/:ws" && route.method === "POST"),
    );
    expect(named.length).toBeGreaterThan(10);
    const answers = new Map<string, string>();
    for (const route of named) {
      const methods = route.method === "ALL" ? ["GET", "POST"] : [route.method];
      for (const method of methods) {
        for (const ws of [aliceWs, "ws_0000000000000000"]) {
          const path = concrete(route.path, ws);
          const response = await instance.raw("mallory", method, path, {
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
            ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }),
          });
          answers.set(
            `${method} ${normalisePath(route.path)} (${ws === aliceWs ? "alice's" : "none"})`,
            `${response.status} ${response.text}`,
          );
        }
      }
    }
    const distinct = new Set(answers.values());
    expect([...distinct], JSON.stringify(Object.fromEntries(answers), null, 1)).toHaveLength(1);
    expect([...distinct][0]).toMatch(/^404 /);
  });
});
