import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Conflict } from "../../../../src/errors.ts";
import { errorHandler } from "../../../../src/http/error-response.ts";
import type { Principal } from "../../../../src/identity/principal.ts";
import { Catalog } from "../../../../src/platform/connections/catalog.ts";
import type { CatalogConnectRequest } from "../../../../src/platform/connections/catalog-connect.ts";
import type { ServerJson } from "../../../../src/platform/connections/catalog-entry.ts";
import {
  catalogRoutes,
  catalogWorkspaceRoutes,
} from "../../../../src/platform/connections/catalog-routes.ts";
import type { AppEnv } from "../../../../src/web/app-env.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { admit } from "../../../../src/workspace/gate.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The routes mounted as the HTTP app mounts them: workspace routes under /v1/workspaces/:ws behind
// a gate (here the real `admit`, with the caller named by a test header instead of a credential).

const ADMIN = `usr_${"a".repeat(24)}`;
const MEMBER = `usr_${"b".repeat(24)}`;
const STRANGER = `usr_${"c".repeat(24)}`;
const ORG_ADMIN = `usr_${"d".repeat(24)}`;
const SECRET = "sk-live-7f3a9c";

let temp: TempRoot;
let outside: string;
let app: Hono<AppEnv>;
let connects: { workspaceId: string; principalId: string; request: CatalogConnectRequest }[];
let logged: ReturnType<typeof memoryLog>;

function server(name: string, extra: Partial<ServerJson> = {}): ServerJson {
  return {
    name,
    description: `The ${name} server`,
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: `https://${name.split("/")[1]}.example.com/mcp` }],
    ...extra,
  };
}

function person(id: string): Principal {
  return { id, displayName: id, email: null, orgRole: id === ORG_ADMIN ? "admin" : "member" };
}

async function call(as: string, method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { "x-test-principal": as };
  if (body !== undefined) headers["content-type"] = "application/json";
  return app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

beforeEach(async () => {
  temp = await openTempRoot("catalog-routes", ADMIN);
  await temp.workspaces.addMember(temp.ws, MEMBER, "member");
  outside = await mkdtemp(join(tmpdir(), "atrium-catalog-routes-"));
  const dir = join(outside, "catalog");
  await mkdir(dir);
  await writeFile(join(dir, "weather.json"), JSON.stringify(server("io.github.acme/weather")));
  await writeFile(
    join(dir, "legacy.json"),
    JSON.stringify(server("com.example/legacy", { remotes: [{ type: "sse", url: "https://l/sse" }] })),
  );
  await writeFile(join(dir, "broken.json"), "{");
  logged = memoryLog();
  const catalog = new Catalog({
    dir,
    storage: temp.layout.partition("connections"),
    clock: new FakeTime().clock,
    log: logged.log,
  });
  connects = [];
  const connect = async (workspaceId: string, principalId: string, request: CatalogConnectRequest) => {
    connects.push({ workspaceId, principalId, request });
    if (request.name === "taken") {
      throw new Conflict("connection_exists", "A connection named taken exists.");
    }
    return {
      name: request.name,
      url: request.url,
      auth: { kind: request.auth.kind },
      snapshot: { version: 1 },
    };
  };

  const gated = new Hono<AppEnv>();
  gated.use("*", async (c, next) => {
    c.set("admission", admit(temp.workspaces, c.get("principal"), c.req.param("ws") ?? ""));
    c.set("access", NO_CALLER);
    await next();
  });
  gated.route("/", catalogWorkspaceRoutes(catalog, connect, temp.workspaces));

  app = new Hono<AppEnv>();
  app.onError(errorHandler(logged.log));
  app.use("*", async (c, next) => {
    c.set("requestId", "req-test");
    c.set("principal", person(c.req.header("x-test-principal") ?? ""));
    await next();
  });
  app.route("/v1/workspaces/:ws", gated);
  app.route("/", catalogRoutes(catalog));
});

afterEach(async () => {
  await temp.remove();
  await rm(outside, { recursive: true, force: true });
});

describe("GET /v1/catalog", () => {
  it("lists the operator's entries in the registry's shape, each marked connectable or not", async () => {
    const response = await call(MEMBER, "GET", "/v1/catalog");
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({
      servers: [
        {
          server: server("com.example/legacy", { remotes: [{ type: "sse", url: "https://l/sse" }] }),
          _meta: {
            "dev.atrium/catalog": {
              id: "com.example~legacy",
              scope: "instance",
              connectable: false,
              reason: "Atrium connects to streamable-http remotes; this server offers sse.",
            },
          },
        },
        {
          server: server("io.github.acme/weather"),
          _meta: {
            "dev.atrium/catalog": {
              id: "io.github.acme~weather",
              scope: "instance",
              connectable: true,
              url: "https://weather.example.com/mcp",
            },
          },
        },
      ],
      metadata: { count: 2 },
    });
  });

  it("shows the skipped files to an org admin only", async () => {
    expect(await json(await call(ORG_ADMIN, "GET", "/v1/catalog"))).toMatchObject({
      problems: [{ file: "broken.json", message: expect.stringContaining("Not valid JSON") }],
    });
    expect(await json(await call(ADMIN, "GET", "/v1/catalog"))).not.toHaveProperty("problems");
  });
});

describe("a workspace's catalog", () => {
  it("lets an admin add an entry that only this workspace's members see", async () => {
    const added = await call(ADMIN, "POST", `/v1/workspaces/${temp.ws}/catalog`, server("com.example/crm"));
    expect(added.status).toBe(201);
    expect(await json(added)).toMatchObject({
      server: { name: "com.example/crm" },
      _meta: { "dev.atrium/catalog": { id: "com.example~crm", scope: "workspace", addedBy: ADMIN } },
    });

    const seen = await json(await call(MEMBER, "GET", `/v1/workspaces/${temp.ws}/catalog`));
    expect((seen.servers as { server: ServerJson }[]).map((s) => s.server.name)).toEqual([
      "com.example/legacy",
      "io.github.acme/weather",
      "com.example/crm",
    ]);
    expect(seen).not.toHaveProperty("problems");
    expect((await call(MEMBER, "GET", `/v1/workspaces/${temp.ws}/catalog/com.example~crm`)).status).toBe(200);
    expect((await call(MEMBER, "GET", "/v1/catalog").then(json)).metadata).toEqual({ count: 2 });
  });

  it("refuses a member's add, remove and connect", async () => {
    for (const [method, path, body] of [
      ["POST", "catalog", server("com.example/crm")],
      ["DELETE", "catalog/io.github.acme~weather", undefined],
      ["POST", "catalog/io.github.acme~weather/connect", {}],
    ] as const) {
      const response = await call(MEMBER, method, `/v1/workspaces/${temp.ws}/${path}`, body);
      expect(response.status, `${method} ${path}`).toBe(403);
    }
    expect(connects).toEqual([]);
  });

  it("answers a stranger with the workspace's 404 on every route", async () => {
    for (const [method, path] of [
      ["GET", "catalog"],
      ["GET", "catalog/io.github.acme~weather"],
      ["POST", "catalog"],
      ["DELETE", "catalog/io.github.acme~weather"],
      ["POST", "catalog/io.github.acme~weather/connect"],
    ] as const) {
      const response = await call(
        STRANGER,
        method,
        `/v1/workspaces/${temp.ws}/${path}`,
        method === "GET" ? undefined : {},
      );
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await json(response)).toMatchObject({ error: { code: "workspace_not_found" } });
    }
  });

  it("refuses a bad body by what is wrong", async () => {
    const path = `/v1/workspaces/${temp.ws}/catalog`;
    expect(await json(await call(ADMIN, "POST", path, { name: "nope" }))).toMatchObject({
      error: { code: "invalid_input", message: expect.stringContaining("Not a server.json") },
    });
    const plain = await app.request(path, {
      method: "POST",
      headers: { "x-test-principal": ADMIN, "content-type": "text/plain" },
      body: JSON.stringify(server("com.example/crm")),
    });
    expect(plain.status).toBe(415);
    expect((await call(ADMIN, "POST", path, server("io.github.acme/weather"))).status).toBe(409);
  });

  it("refuses an entry whose Authorization header has a fixed value, which no member then reads", async () => {
    const path = `/v1/workspaces/${temp.ws}/catalog`;
    const headers = [{ name: "Authorization", value: `Bearer ${SECRET}` }];
    const remotes = [{ type: "streamable-http", url: "https://crm.example.com/mcp", headers }];
    const added = await call(ADMIN, "POST", path, server("com.example/crm", { remotes }));
    expect(added.status).toBe(400);
    const body = await added.text();
    expect(body).toContain('\\"remotes.0.headers.0\\" (Authorization) is named as a credential');
    expect(body).not.toContain(SECRET);
    expect(await (await call(MEMBER, "GET", path)).text()).not.toContain(SECRET);
  });

  it("lets an admin remove its own entry, not the operator's", async () => {
    await call(ADMIN, "POST", `/v1/workspaces/${temp.ws}/catalog`, server("com.example/crm"));
    expect((await call(ADMIN, "DELETE", `/v1/workspaces/${temp.ws}/catalog/com.example~crm`)).status).toBe(
      204,
    );
    expect((await call(ADMIN, "DELETE", `/v1/workspaces/${temp.ws}/catalog/com.example~crm`)).status).toBe(
      404,
    );
    expect(
      (await call(ADMIN, "DELETE", `/v1/workspaces/${temp.ws}/catalog/io.github.acme~weather`)).status,
    ).toBe(403);
  });

  it("answers a hostile id with not found", async () => {
    for (const id of ["..%2F..%2Fetc%2Fpasswd", "%2e%2e~x", ".tmp-x", "a~b%00", "a~b%2F..%2F..%2Fx"]) {
      for (const [method, suffix] of [
        ["GET", ""],
        ["DELETE", ""],
        ["POST", "/connect"],
      ] as const) {
        const response = await call(
          ADMIN,
          method,
          `/v1/workspaces/${temp.ws}/catalog/${id}${suffix}`,
          method === "GET" ? undefined : {},
        );
        expect(response.status, `${method} ${id}`).toBe(404);
        expect(await json(response)).toMatchObject({ error: { code: "catalog_entry_not_found" } });
      }
    }
    expect(connects).toEqual([]);
  });
});

describe("POST …/catalog/:id/connect", () => {
  const connectPath = (id: string) => `/v1/workspaces/${temp.ws}/catalog/${id}/connect`;

  it("creates the connection through the injected connect and answers 201 with it", async () => {
    const response = await call(ADMIN, "POST", connectPath("io.github.acme~weather"), {});
    expect(response.status).toBe(201);
    expect(await json(response)).toEqual({
      name: "weather",
      url: "https://weather.example.com/mcp",
      auth: { kind: "none" },
      snapshot: { version: 1 },
    });
    expect(connects).toEqual([
      {
        workspaceId: temp.ws,
        principalId: ADMIN,
        request: { name: "weather", url: "https://weather.example.com/mcp", auth: { kind: "none" } },
      },
    ]);
  });

  it("connects from a workspace's own entry with a static credential, which no answer or log repeats", async () => {
    const keyed = server("com.example/crm", {
      remotes: [
        {
          type: "streamable-http",
          url: "https://crm.example.com/mcp",
          headers: [{ name: "X-Api-Key", isRequired: true, isSecret: true }],
        },
      ],
    });
    await call(ADMIN, "POST", `/v1/workspaces/${temp.ws}/catalog`, keyed);
    const asked = await call(ADMIN, "POST", connectPath("com.example~crm"), {});
    expect(await json(asked)).toMatchObject({
      error: { code: "invalid_input", message: expect.stringContaining('"X-Api-Key"') },
    });

    const auth = { kind: "static", header: "X-Api-Key", value: SECRET };
    const response = await call(ADMIN, "POST", connectPath("com.example~crm"), { name: "crm", auth });
    expect(response.status).toBe(201);
    expect(await response.text()).not.toContain(SECRET);
    expect(connects.at(-1)?.request).toEqual({ name: "crm", url: "https://crm.example.com/mcp", auth });
    const wrongHeader = await call(ADMIN, "POST", connectPath("com.example~crm"), {
      auth: { kind: "static", header: "Authorization", value: SECRET },
    });
    expect(wrongHeader.status).toBe(400);
    expect(await wrongHeader.text()).not.toContain(SECRET);
    expect(JSON.stringify(logged.lines)).not.toContain(SECRET);
  });

  it("refuses an entry that cannot be connected, an unknown entry, another workspace's entry and a bad body", async () => {
    expect(await json(await call(ADMIN, "POST", connectPath("com.example~legacy"), {}))).toMatchObject({
      error: { code: "catalog_entry_not_connectable" },
    });
    expect((await call(ADMIN, "POST", connectPath("com.example~nothing"), {})).status).toBe(404);
    const other = (await temp.workspaces.create("Other", ADMIN)).id;
    await call(ADMIN, "POST", `/v1/workspaces/${other}/catalog`, server("com.example/theirs"));
    expect((await call(ADMIN, "POST", connectPath("com.example~theirs"), {})).status).toBe(404);
    expect(
      (await call(ADMIN, "POST", connectPath("io.github.acme~weather"), { url: "https://evil/mcp" })).status,
    ).toBe(400);
    expect(connects).toEqual([]);
  });

  it("passes the connections store's refusal through", async () => {
    const response = await call(ADMIN, "POST", connectPath("io.github.acme~weather"), { name: "taken" });
    expect(response.status).toBe(409);
    expect(await json(response)).toMatchObject({ error: { code: "connection_exists" } });
  });
});
