import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { covers, type DocumentedRoute, documentedRoutes, registers } from "../../scripts/lib/route-docs.mjs";
import type { RegisteredRoute } from "../../src/http/app.ts";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// The route tables of README.md and docs/*.md against the routes hono itself registered (its
// `app.routes`, prefixes resolved), in both directions.

let instance: TestAtrium;
let routes: readonly RegisteredRoute[];
let documented: DocumentedRoute[];

beforeAll(async () => {
  instance = await startTestAtrium();
  routes = instance.atrium.routes;
  documented = documentedRoutes(process.cwd());
});

afterAll(async () => {
  await instance?.stop();
});

describe("the route tables of README.md and docs/", () => {
  it("the app registers routes and the docs have tables to hold them to", () => {
    expect(routes.length).toBeGreaterThan(20);
    expect(routes).toContainEqual({ method: "POST", path: "/mcp/:ws" });
    expect(documented.length).toBeGreaterThan(20);
  });

  it("list every route the app registers", () => {
    const undocumented = routes
      .filter((route) => !documented.some((entry) => covers(entry, route)))
      .map((route) => `${route.method} ${route.path} is not in a route table of README.md or docs/*.md`);
    expect(undocumented).toEqual([]);
  });

  it("list no route the app does not register", () => {
    const stale = documented.flatMap((entry) =>
      [...entry.methods]
        .filter((method) => method !== "ANY" && !registers(routes, entry, method))
        .map(
          (method) => `${entry.file}:${entry.line} lists ${method} ${entry.raw}, which no route registers`,
        ),
    );
    expect(stale).toEqual([]);
  });
});
