import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { Catalog } from "../../src/platform/connections/catalog.ts";
import {
  type CatalogSettings,
  catalogConfigProperties,
  resolveCatalogSettings,
} from "../../src/platform/connections/catalog-config.ts";
import type { CatalogConnectRequest } from "../../src/platform/connections/catalog-connect.ts";
import { catalogRoutes, catalogWorkspaceRoutes } from "../../src/platform/connections/catalog-routes.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { invite } from "../helpers/members.ts";

// The catalog over real HTTP, mounted as the connections app will mount it: its config piece in
// the `connections` section of instance.json, `GET /v1/catalog` behind authentication, the
// workspace routes behind the gate. `connect` is a stand-in recording what it was asked.

const connects: { workspaceId: string; principalId: string; request: CatalogConnectRequest }[] = [];

const catalogHost: PlatformApp<CatalogSettings> = {
  name: "connections",
  config: {
    schema: { type: "object", additionalProperties: false, properties: { ...catalogConfigProperties } },
    resolve: resolveCatalogSettings,
  },
  start({ settings, storage, clock, log, workspaces }) {
    const catalog = new Catalog({ dir: settings.catalogDir, storage, clock, log });
    const connect = async (workspaceId: string, principalId: string, request: CatalogConnectRequest) => {
      connects.push({ workspaceId, principalId, request });
      return { name: request.name, url: request.url, state: "running", snapshot: { version: 1 } };
    };
    return {
      tools: new AppTools("connections"),
      routes: catalogRoutes(catalog),
      workspaceRoutes: catalogWorkspaceRoutes(catalog, connect, workspaces),
      leftovers: catalog,
    };
  },
};

const apps = [...PLATFORM_APPS.filter((app) => app.name !== "connections"), catalogHost];
const weather = {
  name: "io.github.acme/weather",
  description: "Forecasts",
  version: "1.0.0",
  remotes: [{ type: "streamable-http", url: "https://weather.example.com/mcp" }],
};
const crm = {
  ...weather,
  name: "com.example/crm",
  remotes: [{ type: "streamable-http", url: "https://crm.example.com/mcp" }],
};

let instance: TestAtrium;
let ws: string;
let otherWs: string;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), "atrium-catalog-it-"));
  await mkdir(join(dir, "catalog"));
  await writeFile(join(dir, "catalog", "weather.json"), JSON.stringify(weather));
  await writeFile(join(dir, "catalog", "broken.json"), "{");
  instance = await startTestAtrium({ dir, apps, sections: { connections: { catalogDir: "catalog" } } });
  ws = await bootstrapWorkspace(instance, "alice");
  otherWs = await bootstrapWorkspace(instance, "carol");
  const invitation = await invite(instance.rest, "alice", ws, { principalId: testPrincipal("bob").id });
  expect((await instance.rest("bob", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(200);
});

afterAll(async () => {
  await instance?.stop();
});

describe("the catalog over HTTP", () => {
  it("lists the folder instance.json names to any signed-in person, and to nobody else", async () => {
    const listed = await instance.rest("mallory", "GET", "/v1/catalog");
    expect(listed.status).toBe(200);
    expect(await listed.json()).toMatchObject({
      servers: [
        {
          server: weather,
          _meta: { "dev.atrium/catalog": { id: "io.github.acme~weather", connectable: true } },
        },
      ],
      metadata: { count: 1 },
    });
    expect((await instance.rest(null, "GET", "/v1/catalog")).status).toBe(401);
    const asOperator = (await (await instance.rest("orgadmin-olga", "GET", "/v1/catalog")).json()) as {
      problems: { file: string }[];
    };
    expect(asOperator.problems.map((p) => p.file)).toEqual(["broken.json"]);
  });

  it("keeps a workspace's own entry in that workspace, and holds strangers to the one 404", async () => {
    expect((await instance.rest("alice", "POST", `/v1/workspaces/${ws}/catalog`, crm)).status).toBe(201);
    expect((await instance.rest("bob", "POST", `/v1/workspaces/${ws}/catalog`, crm)).status).toBe(403);

    const ids = async (user: string, workspace: string) =>
      (
        (await (await instance.rest(user, "GET", `/v1/workspaces/${workspace}/catalog`)).json()) as {
          servers: { _meta: Record<string, { id: string }> }[];
        }
      ).servers.map((s) => s._meta["dev.atrium/catalog"]?.id);
    expect(await ids("bob", ws)).toEqual(["io.github.acme~weather", "com.example~crm"]);
    expect(await ids("carol", otherWs)).toEqual(["io.github.acme~weather"]);

    const stranger = await instance.rest("carol", "GET", `/v1/workspaces/${ws}/catalog/com.example~crm`);
    const nowhere = await instance.rest(
      "carol",
      "GET",
      "/v1/workspaces/ws_0000000000000000/catalog/com.example~crm",
    );
    expect(stranger.status).toBe(404);
    expect(await stranger.text()).toBe(await nowhere.text());
  });

  it("connects from an entry as the admin who asked, answering 201 with the connection", async () => {
    const response = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/catalog/com.example~crm/connect`,
      {},
    );
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ name: "crm", url: "https://crm.example.com/mcp" });
    expect(connects).toEqual([
      {
        workspaceId: ws,
        principalId: testPrincipal("alice").id,
        request: { name: "crm", url: "https://crm.example.com/mcp", auth: { kind: "none" } },
      },
    ]);
    const member = await instance.rest(
      "bob",
      "POST",
      `/v1/workspaces/${ws}/catalog/com.example~crm/connect`,
      {},
    );
    expect(member.status).toBe(403);
    expect(connects).toHaveLength(1);
  });

  it("refuses a wrong catalogDir in instance.json by its field name", async () => {
    const failure = await startTestAtrium({ apps, sections: { connections: { catalogDir: 5 } } }).catch(
      (error: unknown) => error,
    );
    expect(String(failure)).toContain("connections.catalogDir: must be string");
  });
});
