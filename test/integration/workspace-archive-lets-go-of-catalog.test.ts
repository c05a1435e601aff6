import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { Catalog } from "../../src/platform/connections/catalog.ts";
import { GrantStore } from "../../src/platform/connections/grants.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// An archived workspace's catalog entries and connection grants were kept in memory for the
// process's life: Catalog.forget and GrantStore.forgetWorkspace existed, and nothing called them.
// The archive now tells the connections app (its `archived`), which lets both go (adr/0038, amended).

let instance: TestAtrium;
beforeAll(async () => {
  instance = await startTestAtrium();
});
afterAll(async () => {
  vi.restoreAllMocks();
  await instance?.stop();
});

const entry = (i: number) => ({
  name: `com.example/crm${i}`,
  description: "The CRM",
  version: "1.0.0",
  remotes: [{ type: "streamable-http", url: `https://crm${i}.example.com/mcp` }],
});

it("an archived workspace's catalog entries and connection grants leave memory as the archive answers", async () => {
  // The app's own instances, seen as they serve (each call goes through unchanged).
  let catalog: Catalog | undefined;
  const list = Catalog.prototype.list;
  vi.spyOn(Catalog.prototype, "list").mockImplementation(function (this: Catalog, ws: string) {
    catalog = this;
    return list.call(this, ws);
  });
  let grantStore: GrantStore | undefined;
  const listGrants = GrantStore.prototype.list;
  vi.spyOn(GrantStore.prototype, "list").mockImplementation(function (this: GrantStore, ws: string) {
    grantStore = this;
    return listGrants.call(this, ws);
  });

  const ws = await bootstrapWorkspace(instance, "alice");
  const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Kept" });
  const kept = ((await created.json()) as { id: string }).id;
  for (const id of [ws, kept]) {
    for (let i = 0; i < 3; i++)
      expect((await instance.rest("alice", "POST", `/v1/workspaces/${id}/catalog`, entry(i))).status).toBe(
        201,
      );
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${id}/catalog`)).status).toBe(200);
    expect((await instance.rest("alice", "GET", `/v1/workspaces/${id}/connections/grants`)).status).toBe(200);
  }
  // GrantStore shows what it holds through no method of its own.
  const grantsHeld = (id: string) =>
    (grantStore as unknown as { cache: { get: (key: string) => unknown } }).cache.get(id) !== undefined;
  const held = catalog?.heldWorkspaces ?? 0;
  expect(held).toBeGreaterThanOrEqual(2);
  expect(grantsHeld(ws)).toBe(true);

  expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
  expect(catalog?.heldWorkspaces).toBe(held - 1);
  expect(grantsHeld(ws)).toBe(false);
  // The other workspace's are kept, and it lists its entries from memory as before.
  expect(grantsHeld(kept)).toBe(true);
  const listed = await instance.rest("alice", "GET", `/v1/workspaces/${kept}/catalog`);
  expect(listed.status).toBe(200);
  expect(catalog?.heldWorkspaces).toBe(held - 1);
  expect((await instance.rest("alice", "GET", `/v1/workspaces/${ws}/catalog`)).status).toBe(404);
});
