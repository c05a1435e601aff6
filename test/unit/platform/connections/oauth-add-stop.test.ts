import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Connections } from "../../../../src/platform/connections/connections.ts";
import type { ConnectionsDeps } from "../../../../src/platform/connections/connections-deps.ts";
import { PersonalConnections } from "../../../../src/platform/connections/personal.ts";
import { createPersonalStore } from "../../../../src/platform/connections/personal-store.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { inertConnectionsDeps } from "../../../helpers/connections-deps.ts";
import { gate } from "../../../helpers/gate.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// An OAuth add's look at its server is its discovery (oauth/pending.ts): a look like a static
// add's photograph, so an add that starts once the graceful stop began is refused 409 `stopping`
// before it asks the server anything, and stores nothing (adr/0122, amended). The stop cutting a
// discovery under way: test/integration/connections-looks-ended.test.ts.

const ADMIN = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let discovered: number;
let started: number;

function deps(store: ConnectionStore) {
  return inertConnectionsDeps(store, {
    authorizer: {
      discover: async () => {
        discovered += 1;
        return { issuer: "https://as.example.com" };
      },
      start: async () => {
        started += 1;
        return { go_url: "https://atrium.example/go/x", expiresAt: "2026-12-07T00:10:00.000Z" };
      },
    },
    layout: temp.layout,
  });
}

beforeEach(async () => {
  temp = await openTempRoot("oauth-add-stop", ADMIN);
  discovered = 0;
  started = 0;
});

afterEach(async () => {
  await temp.remove();
});

describe("an OAuth add started once the graceful stop began", () => {
  it("a workspace connection: refused 409 stopping, nothing discovered, started or stored", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    const connections = new Connections(deps(store));
    await connections.stop();
    const added = connections.add(temp.ws, ADMIN, {
      name: "oa",
      url: "https://mcp.example.com/mcp",
      auth: { kind: "oauth" },
    });
    await expect(added).rejects.toMatchObject({ status: 409, code: "stopping" });
    expect({ discovered, started, stored: store.names(temp.ws) }).toEqual({
      discovered: 0,
      started: 0,
      stored: [],
    });
  });

  it("a member's personal connection: refused 409 stopping, nothing discovered, started or stored", async () => {
    const store = createPersonalStore(temp.layout);
    const connections = new PersonalConnections(deps(store));
    await connections.stop();
    const added = connections.add(temp.ws, ADMIN, {
      name: "oa",
      url: "https://mcp.example.com/mcp",
      auth: { kind: "oauth" },
    });
    await expect(added).rejects.toMatchObject({ status: 409, code: "stopping" });
    expect({ discovered, started, stored: store.names(ADMIN) }).toEqual({
      discovered: 0,
      started: 0,
      stored: [],
    });
  });
});

describe("an OAuth add while a connection stored under its name is removed", () => {
  it("is not ended by that removal: it is answered for itself (connection_exists), not the other's 404", async () => {
    const store = new ConnectionStore(temp.layout.partition("connections"));
    const base = deps(store);
    const [inDiscovery, held] = [gate(), gate()];
    const forgotten: string[] = [];
    const connections = new Connections({
      ...base,
      authorizer: {
        ...base.authorizer,
        forget: (record: { id: string; name: string }) => void forgotten.push(record.name),
        discover: async () => {
          inDiscovery.open();
          await held.promise;
          return { issuer: "https://as.example.com" };
        },
      },
    } as unknown as ConnectionsDeps);
    const added = connections.add(temp.ws, ADMIN, {
      name: "oa",
      url: "https://mcp.example.com/mcp",
      auth: { kind: "oauth" },
    });
    await inDiscovery.promise;
    // Another admin's connection of that name lands while this add discovers, and is removed;
    // then a third is stored under it before this add writes.
    const snapshot = {
      version: 1,
      takenAt: "",
      generation: 1,
      protocolVersion: "",
      tools: [],
      digests: {},
      digest: "",
    };
    await store.create(connectionRecord(temp.ws, { name: "oa" }), snapshot, NO_CALLER);
    await connections.remove(temp.ws, ADMIN, "oa");
    await store.create(connectionRecord(temp.ws, { name: "oa" }), snapshot, NO_CALLER);
    held.open();
    // Ended by the removal, it answered the removed one's 404 connection_not_found.
    await expect(added).rejects.toMatchObject({ status: 409, code: "connection_exists" });
    // The flow it started leads nowhere, and is let go rather than holding a slot for ten minutes.
    expect(forgotten).toEqual(["oa"]);
  });
});
