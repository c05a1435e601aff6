import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ScopeCache } from "../../src/platform/skills/scope-cache.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// A person may fill a workspace's skills folder with 500 skills of 256 KiB (adr/0082, 0098), in
// each of the up to 1,000 workspaces they create (adr/0141). Kept listings held every skill's
// body: 20 skills of 250 KB in each of 4 workspaces, listed once each, held 4.8, 9.5, 14.3 and
// 19.1 MiB. They hold each skill's settings alone, within a byte budget (adr/0098, amended).

const WORKSPACES = 4;
const SKILLS_PER_WORKSPACE = 20;
const BODY = "x".repeat(250_000);

let instance: TestAtrium;
let cache: ScopeCache | undefined;
const workspaces: string[] = [];

beforeAll(async () => {
  const original = ScopeCache.prototype.read;
  // The process's one scope cache, caught at its first read.
  vi.spyOn(ScopeCache.prototype, "read").mockImplementation(function (this: ScopeCache, ...args) {
    cache = this;
    return original.apply(this, args);
  });
  instance = await startTestAtrium();
  workspaces.push(await bootstrapWorkspace(instance, "mallory"));
  for (let i = 1; i < WORKSPACES; i++) {
    const created = await instance.rest("mallory", "POST", "/v1/workspaces", { name: `w${i}` });
    expect(created.status).toBe(201);
    workspaces.push(((await created.json()) as { id: string }).id);
  }
  for (const ws of workspaces) {
    for (let s = 0; s < SKILLS_PER_WORKSPACE; s++) {
      const made = await instance.rest("mallory", "POST", `/v1/workspaces/${ws}/skills`, {
        name: `big-${s}`,
        description: "a large skill",
        body: BODY,
      });
      expect(made.status).toBe(201);
    }
  }
}, 120_000);

afterAll(async () => {
  vi.restoreAllMocks();
  await instance?.stop();
});

describe("what one person's skills make the process hold", () => {
  it("is their skills' settings, not their bodies, however many workspaces they fill", async () => {
    const held: number[] = [];
    for (const ws of workspaces) {
      expect((await instance.rest("mallory", "GET", `/v1/workspaces/${ws}/skills`)).status).toBe(200);
      held.push(cache?.heldBytes ?? Number.POSITIVE_INFINITY);
    }
    // Each workspace's twenty skills add their settings and stamps, some kilobytes, never a body.
    const added = held.slice(1).map((bytes, i) => bytes - (held[i] as number));
    for (const bytes of added) expect(bytes).toBeLessThan(BODY.length / 4);
    expect(held.at(-1)).toBeLessThan(BODY.length * 2);
  });

  it("still reads a listed skill's whole body", async () => {
    const read = await instance.rest("mallory", "GET", `/v1/workspaces/${workspaces[0]}/skills/big-0`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { body: string }).body).toBe(BODY);
  });
});
