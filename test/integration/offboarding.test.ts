import type { Client } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";

let instance: TestAtrium;
let ws: string;
let bob: Client;
const bobId = testPrincipal("bob").id;

beforeAll(async () => {
  instance = await startTestAtrium();
  await bootstrapWorkspace(instance, "orgadmin-olga");
  ws = await bootstrapWorkspace(instance, "bob");
  bob = await instance.mcpClient("bob", ws);
});

afterAll(async () => {
  await instance?.stop();
});

describe("offboarding", () => {
  it("only an org admin can list or deactivate people", async () => {
    expect((await instance.rest("bob", "GET", "/v1/users")).status).toBe(403);
    expect((await instance.rest("bob", "POST", `/v1/users/${bobId}/deactivate`)).status).toBe(403);
    const list = await instance.rest("orgadmin-olga", "GET", "/v1/users");
    expect(list.status).toBe(200);
    const users = ((await list.json()) as { users: Array<{ id: string }> }).users.map((u) => u.id);
    expect(users).toContain(bobId);
  });

  it("a deactivated person's next MCP and REST requests are refused, and reactivation restores them", async () => {
    expect((await bob.listTools()).tools.length).toBeGreaterThan(0);
    const off = await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`);
    expect(off.status).toBe(200);
    expect(((await off.json()) as { deactivatedAt?: string }).deactivatedAt).toEqual(expect.any(String));

    await expect(bob.listTools()).rejects.toThrow();
    const rest = await instance.rest("bob", "GET", `/v1/workspaces/${ws}/files`);
    expect(rest.status).toBe(403);
    expect(((await rest.json()) as { error: { message: string } }).error.message).toMatch(/deactivated/);

    const on = await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`);
    expect(on.status).toBe(200);
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${ws}/files`)).status).toBe(200);
  });

  it("deactivation survives a restart", async () => {
    await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`);
    instance = await instance.restart();
    expect((await instance.rest("bob", "GET", "/v1/workspaces")).status).toBe(403);
    await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`);
    expect((await instance.rest("bob", "GET", "/v1/workspaces")).status).toBe(200);
  });

  it("an org admin cannot deactivate themselves, and an unknown person is 404", async () => {
    const self = testPrincipal("orgadmin-olga").id;
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${self}/deactivate`)).status).toBe(400);
    const unknown = testPrincipal("never-signed-in").id;
    expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${unknown}/deactivate`)).status).toBe(
      404,
    );
  });
});
