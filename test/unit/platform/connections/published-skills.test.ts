import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { DamagedConnections } from "../../../../src/platform/connections/connection-view.ts";
import {
  PUBLISHED_SKILLS_IDLE_MS,
  PublishedConnectionSkills,
} from "../../../../src/platform/connections/published-skills.ts";
import type { Snapshot } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// What a workspace's connections publish is kept between listings, but only for each connection's
// current snapshot, only while it is served, and only while its workspace is in use: every refresh
// of every connection once added an entry that nothing ever took out (adr/0134).

const ADMIN = `usr_${"a".repeat(24)}`;
const log = createLogger("silent");

let temp: TempRoot;
let store: ConnectionStore;
let now: number;
let skills: PublishedConnectionSkills;

function snapshot(version: number): Snapshot {
  return {
    version,
    takenAt: "2026-12-07T00:00:00.000Z",
    generation: 1,
    protocolVersion: "2026-07-28",
    instructions: `How to use the server, as of version ${version}.`,
    tools: [],
    digests: {},
    digest: `d${version}`,
  };
}

async function add(name: string): Promise<void> {
  await store.create(connectionRecord(temp.ws, { name, createdBy: ADMIN }), snapshot(1));
}

async function bodies(): Promise<string[]> {
  return (await skills.list(temp.ws)).skills.map((skill) => `${skill.name}: ${skill.body}`);
}

beforeEach(async () => {
  temp = await openTempRoot("published-skills", ADMIN);
  store = new ConnectionStore(temp.layout.partition("connections"));
  now = Date.UTC(2026, 11, 7);
  skills = new PublishedConnectionSkills(store, new DamagedConnections(log), log, [], () => now);
  await add("alpha");
  await add("beta");
});

afterEach(async () => {
  await skills.close();
  await temp.remove();
});

describe("the published skills kept for a workspace's connections", () => {
  it("hold only each connection's current snapshot, however often it is refreshed", async () => {
    await bodies();
    for (let version = 2; version <= 6; version += 1) {
      await store.appendSnapshot(temp.ws, "alpha", snapshot(version));
      expect(await bodies()).toContain(`alpha: How to use the server, as of version ${version}.`);
      expect(await skills.kept(temp.ws)).toBe(2);
    }
  });

  it("are the same objects while the snapshot is", async () => {
    const [first, again] = [await skills.list(temp.ws), await skills.list(temp.ws)];
    expect(again.skills).toEqual(first.skills);
    for (const [i, skill] of again.skills.entries()) expect(skill).toBe(first.skills[i]);
  });

  it("go with a connection removed, and with one no longer served", async () => {
    await bodies();
    await store.remove(temp.ws, "alpha");
    await skills.forget(temp.ws, "alpha");
    expect(await skills.kept(temp.ws)).toBe(1);
    await store.update(temp.ws, "beta", (record) => ({ ...record, disabled: true }));
    expect(await bodies()).toEqual([]);
    expect(await skills.kept(temp.ws)).toBe(0);
  });

  it("go with their workspace once it is idle, as its registry does", async () => {
    await bodies();
    await skills.sweep(now + PUBLISHED_SKILLS_IDLE_MS - 1);
    expect(await skills.kept(temp.ws)).toBe(2);
    await skills.sweep(now + PUBLISHED_SKILLS_IDLE_MS);
    expect(await skills.kept(temp.ws)).toBe(0);
    expect(await bodies()).toHaveLength(2);
  });
});

describe("what a connection that is not served publishes", () => {
  it("is nothing: disabled, or bearing a platform app's name", async () => {
    const reserved = new PublishedConnectionSkills(
      store,
      new DamagedConnections(log),
      log,
      ["beta"],
      () => now,
    );
    try {
      expect((await reserved.list(temp.ws)).skills.map((skill) => skill.name)).toEqual(["alpha"]);
    } finally {
      await reserved.close();
    }
    await store.update(temp.ws, "alpha", (record) => ({ ...record, disabled: true }));
    expect((await skills.list(temp.ws)).skills.map((skill) => skill.name)).toEqual(["beta"]);
  });
});
