import type { Tool } from "@modelcontextprotocol/client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { WorkspaceSources } from "../../../../src/platform/app.ts";
import { Connections } from "../../../../src/platform/connections/connections.ts";
import type { ConnectionSource } from "../../../../src/platform/connections/gate.ts";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import type { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { Serving } from "../../../../src/platform/connections/serving.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES, photograph } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import type { Source, SourceClosing } from "../../../../src/sources/source.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { inertConnectionsDeps } from "../../../helpers/connections-deps.ts";
import { eventually } from "../../../helpers/eventually.ts";
import { type Gate, gate } from "../../../helpers/gate.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A connection's client is built (its credential opened: a vault read) before it is put in the
// workspace's registry. A removal or a disable stored while it is built must not be undone by the
// put that follows it: a removed or disabled connection is never served again.

const ADMIN = `usr_${"a".repeat(24)}`;
const TOOL = { name: "echo", description: "Echo.", inputSchema: { type: "object" } } as Tool;

let temp: TempRoot;
let store: ConnectionStore;
/** What the workspace's registry serves, by source name. */
let served: Map<string, Source>;
/** Opening a client waits on this gate once it is armed, after `skip` opens; `reached` opens when one waits. */
let held: { gate: Gate; reached: Gate; skip: number } | undefined;
let connections: Connections;

function record(): ConnectionRecord {
  return connectionRecord(temp.ws, { createdBy: ADMIN });
}

/** The client opened after `skip` more waits until the test opens the returned gate. */
function holdOpen(skip = 0): Gate & { reached: Promise<void> } {
  held = { gate: gate(), reached: gate(), skip };
  return { ...held.gate, reached: held.reached.promise };
}

function photographed() {
  const taken = photograph(
    [TOOL],
    {
      version: 1,
      takenAt: "2026-12-07T00:00:00.000Z",
      generation: 1,
      protocolVersion: "2026-07-28",
    },
    DEFAULT_MAX_SNAPSHOT_BYTES,
    "remote",
  );
  if (!("snapshot" in taken)) throw new Error("refused");
  return taken;
}

beforeEach(async () => {
  temp = await openTempRoot("connection-serving", ADMIN);
  store = new ConnectionStore(temp.layout.partition("connections"));
  await store.create(record(), photographed().snapshot, NO_CALLER);
  served = new Map();
  held = undefined;
  const sources: WorkspaceSources = {
    replace: async (_ws, build) => {
      const source = await build();
      served.set(source.name, source);
      return undefined;
    },
    remove: async (_ws, name) => void served.delete(name),
  };
  const live = {
    describe: async () => ({ protocolVersion: "2026-07-28", hasTools: true, instructions: undefined }),
    listTools: async () => [TOOL],
    callTool: async () => ({ content: [{ type: "text", text: "echoed" }] }),
    skills: async () => [],
    close: async () => undefined,
  };
  const remote = {
    source: async () => {
      if (held && held.skip > 0) {
        held.skip -= 1;
        return live;
      }
      const waiting = held;
      held = undefined;
      if (waiting) {
        waiting.reached.open();
        await waiting.gate.promise;
      }
      return live;
    },
    credentialRefused: () => false,
  } as unknown as RemoteServers;
  connections = new Connections(
    inertConnectionsDeps(store, { remote, workspaces: { roleOf: () => "admin" }, sources }),
  );
});

afterEach(async () => {
  await temp.remove();
});

describe("a connection's client built while the connection is taken out of service", () => {
  it("disabled while a health loop's change builds it: not served", async () => {
    const open = holdOpen();
    const changing = connections.changed(temp.ws, "srv");
    await open.reached;
    const disabling = connections.setDisabled(temp.ws, ADMIN, "srv", true);
    await eventually(async () => expect((await store.get(temp.ws, "srv")).disabled).toBe(true));
    open.open();
    await Promise.all([changing, disabling]);
    expect([...served.keys()]).toEqual([]);
  });

  it("removed while a refresh builds it: not served, and the refresh says it is gone", async () => {
    // The refresh's photograph opens one client; the client it serves is the next.
    const open = holdOpen(1);
    const refreshing = connections.refresh(temp.ws, ADMIN, "srv").catch((error: unknown) => error);
    await open.reached;
    const removing = connections.remove(temp.ws, ADMIN, "srv");
    await eventually(() => expect(store.names(temp.ws)).toEqual([]));
    open.open();
    await removing;
    expect(await refreshing).toMatchObject({ code: "connection_not_found" });
    expect([...served.keys()]).toEqual([]);
  });

  it("disabled and enabled again: served", async () => {
    await connections.setDisabled(temp.ws, ADMIN, "srv", true);
    await connections.setDisabled(temp.ws, ADMIN, "srv", false);
    expect([...served.keys()]).toEqual(["srv"]);
  });
});

describe("a lapse a health loop found, for a connection removed while it was being noted", () => {
  it("is the removed record's, not a new connection's of the same name", async () => {
    await store.writeCredential(temp.ws, "srv", { lapsed: true });
    // The change reads the lapse, then waits; meanwhile the connection is removed and added anew.
    const noted = gate();
    const read = store.credential.bind(store);
    vi.spyOn(store, "credential").mockImplementationOnce(async (...args) => {
      const health = await read(...args);
      await noted.promise;
      return health;
    });
    const changing = connections.changed(temp.ws, "srv");
    await eventually(() => expect(store.credential).toHaveBeenCalled());
    await connections.remove(temp.ws, ADMIN, "srv");
    const { snapshot } = photographed();
    await store.create({ ...record(), id: `con_${"d".repeat(24)}` }, snapshot, NO_CALLER);
    await connections.changed(temp.ws, "srv");
    noted.open();
    await changing.catch(() => undefined);
    const caller = { principalId: ADMIN, workspaceId: temp.ws, access: NO_CALLER };
    const answer = await served.get("srv")?.callTool("echo", {}, caller, { requestId: "r" });
    expect(answer?.content).toEqual([{ type: "text", text: "echoed" }]);
  });
});

/** Each workspace's registry as Serving swaps it: a put answers the source it replaced, a take-out closes it. */
function swappingRegistries(): { sources: WorkspaceSources; of(workspaceId: string): Map<string, Source> } {
  const registries = new Map<string, Map<string, Source>>();
  const of = (workspaceId: string) => {
    const registry = registries.get(workspaceId) ?? new Map<string, Source>();
    registries.set(workspaceId, registry);
    return registry;
  };
  return {
    of,
    sources: {
      replace: async (ws, build) => {
        const source = await build();
        const previous = of(ws).get(source.name);
        of(ws).set(source.name, source);
        return previous;
      },
      remove: async (ws, name) => {
        const removed = of(ws).get(name);
        of(ws).delete(name);
        await removed?.close();
      },
    },
  };
}

describe("the client a put supersedes", () => {
  it("is closed as superseded after the turn, and cut by a take-out while it still closes", async () => {
    const { sources, of } = swappingRegistries();
    const registry = of(temp.ws);
    const serving = new Serving(store, sources, []);
    // Each client records how it was closed; a superseded close waits for its connect (the gate),
    // which a close "now" cuts.
    const closes: string[][] = [];
    const client = (): ConnectionSource => {
      const mine: string[] = [];
      closes.push(mine);
      const connecting = gate();
      return {
        name: "srv",
        close: async (how: SourceClosing = "now") => {
          mine.push(how);
          if (how === "now") connecting.open();
          else await connecting.promise;
        },
      } as unknown as ConnectionSource;
    };
    const where = () => [temp.ws];
    await serving.serve(temp.ws, "srv", where, async () => client());
    const refreshing = serving.serve(temp.ws, "srv", where, async () => client());
    await eventually(() => expect(closes[0]).toEqual(["superseded"]));
    await serving.withdraw(temp.ws, "srv", where);
    await refreshing;
    expect(closes).toEqual([["superseded", "now"], ["now"]]);
    expect([...registry.keys()]).toEqual([]);
  });

  it("is closed even when a build for a later workspace fails (a build that fails)", async () => {
    const other = "ws_0123456789abcdef";
    const { sources } = swappingRegistries();
    const serving = new Serving(store, sources, []);
    const closed: string[] = [];
    let built = 0;
    const client = (): ConnectionSource => {
      const id = `client-${++built}`;
      return {
        name: "srv",
        close: async (how: SourceClosing) => void closed.push(`${id} ${how}`),
      } as unknown as ConnectionSource;
    };
    const both = () => [temp.ws, other];
    await serving.serve(temp.ws, "srv", both, async () => client());
    // The next put replaces the first workspace's client, then fails to build the second's.
    let builds = 0;
    const failing = serving.serve(temp.ws, "srv", both, async () => {
      if (++builds === 2) throw new Error("the vault is unreadable");
      return client();
    });
    await expect(failing).rejects.toThrow("the vault is unreadable");
    expect(closed).toEqual(["client-1 superseded"]);
  });

  it("is cut by a graceful stop while its close still waits on its connect", async () => {
    const { sources } = swappingRegistries();
    const serving = new Serving(store, sources, []);
    const closes: string[] = [];
    const connecting = gate();
    const old = {
      name: "srv",
      close: async (how: SourceClosing) => {
        closes.push(how);
        if (how === "now") connecting.open();
        else await connecting.promise;
      },
    } as unknown as ConnectionSource;
    const where = () => [temp.ws];
    await serving.serve(temp.ws, "srv", where, async () => old);
    await serving.serve(
      temp.ws,
      "srv",
      where,
      async () => ({ name: "srv", close: async () => undefined }) as unknown as ConnectionSource,
    );
    expect(closes).toEqual(["superseded"]);
    await serving.stop();
    expect(closes).toEqual(["superseded", "now"]);
  });
});
