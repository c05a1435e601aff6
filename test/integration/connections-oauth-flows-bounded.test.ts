import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { type OAuthRemoteServer, startOAuthRemoteServer } from "../helpers/oauth-remote-server.ts";

// Every …/oauth/start made a flow kept for twenty minutes, however often the connection's owner
// (any member, for a personal connection) asked: one member grew the flows without end. A
// connection now has one pending sign-in per person; a new start replaces the last (ADR 0122,
// amended 2026-12-07), and the replaced link and its callback say so.

const STARTS = 200;
let dir: string;
let instance: TestAtrium;
let remote: OAuthRemoteServer;
let ws: string;

async function start(): Promise<string> {
  const started = await instance.rest(
    "mallory",
    "POST",
    `/v1/workspaces/${ws}/connections/my_notes/oauth/start`,
  );
  expect(started.status).toBe(200);
  return new URL(((await started.json()) as { go_url: string }).go_url).pathname;
}

beforeAll(async () => {
  dir = await keyedDir("atrium-oauth-flows-bounded-");
  remote = await startOAuthRemoteServer({ accessTokenTtlSeconds: 3600 });
  instance = await startTestAtrium({
    dir,
    sections: {
      credentials: CREDENTIALS_SECTION,
      connections: {
        allowPrivateAddresses: true,
        healthIntervalSeconds: 3600,
        credentialCheckIntervalSeconds: 86_400,
      },
    },
  });
  ws = await bootstrapWorkspace(instance, "mallory");
  const added = await instance.rest("mallory", "POST", `/v1/workspaces/${ws}/connections`, {
    name: "notes",
    url: remote.url,
    personal: true,
    auth: { kind: "oauth" },
  });
  expect(added.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await instance?.stop();
  await remote?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a personal OAuth connection's sign-ins", () => {
  it("leave one pending however often its owner starts one: each earlier link answers replaced", async () => {
    const links: string[] = [];
    for (let i = 0; i < STARTS; i++) links.push(await start());
    const opened = await Promise.all(links.map((link) => instance.raw("mallory", "GET", link)));
    const pending = opened.filter((response) => response.status === 302);
    expect(pending).toHaveLength(1);
    expect(opened.at(-1)?.status).toBe(302);
    const replaced = opened.slice(0, -1);
    for (const response of replaced) {
      expect(response.status).toBe(400);
      expect(response.text).toContain(
        "A newer authorization of this connection was started after this one and replaced it",
      );
    }
  }, 120_000);

  it("refuse the callback of a flow a newer start replaced, with why", async () => {
    const link = await start();
    const opened = await instance.raw("mallory", "GET", link);
    expect(opened.status).toBe(302);
    const state = new URL(String(opened.headers.location)).searchParams.get("state") ?? "";
    const cookie = String(opened.headers["set-cookie"]).split(";")[0] ?? "";
    await start();
    const callback = await instance.raw(
      "mallory",
      "GET",
      `/v1/connections/oauth/callback?state=${encodeURIComponent(state)}&code=anything`,
      { headers: { cookie } },
    );
    expect(callback.status).toBe(400);
    expect(callback.text).toContain("replaced it; finish the newest link, or start again from Atrium");
  });

  it("go with their connection: a removed connection's link answers unknown", async () => {
    const added = await instance.rest("mallory", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "brief",
      url: remote.url,
      personal: true,
      auth: { kind: "oauth" },
    });
    expect(added.status).toBe(201);
    const link = new URL(((await added.json()) as { go_url: string }).go_url).pathname;
    const removed = await instance.rest("mallory", "DELETE", `/v1/workspaces/${ws}/connections/my_brief`);
    expect(removed.status).toBe(204);
    const opened = await instance.raw("mallory", "GET", link);
    expect(opened.status).toBe(400);
    expect(opened.text).toContain("This authorization is unknown or older than 10 minutes");
  });
});
