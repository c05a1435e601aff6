import { describe, expect, it } from "vitest";
import { NotFound } from "../../../../src/errors.ts";
import { createLogger } from "../../../../src/log.ts";
import {
  ConnectionRevalidator,
  HealthMonitor,
  PROBES_AT_ONCE,
} from "../../../../src/platform/connections/health.ts";
import type { CredentialHealth, TransportHealth } from "../../../../src/platform/connections/model.ts";
import type { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import { ServerLooks } from "../../../../src/platform/connections/server-looks.ts";
import type { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";

const WS = "ws_0123456789abcdef";

/** A workspace of `names`, whose servers at a `hang-` name answer only when released. */
function workspace(names: string[]) {
  const written = new Map<string, TransportHealth>();
  let release = () => {};
  const hanging = new Promise<void>((resolve) => {
    release = resolve;
  });
  let probing = 0;
  let most = 0;
  const store = {
    names: () => names,
    transport: async () => ({ up: true, failures: 0 }),
    get: async (_ws: string, name: string) => ({ name, url: `https://${name}.example/mcp`, disabled: false }),
    writeTransport: async (_ws: string, name: string, health: TransportHealth) =>
      void written.set(name, health),
  } as unknown as ConnectionStore;
  const remote = {
    reachable: async (url: string) => {
      probing += 1;
      most = Math.max(most, probing);
      if (url.includes("//hang-")) await hanging;
      probing -= 1;
      return { ok: true };
    },
  } as unknown as RemoteServers;
  const monitor = new HealthMonitor(
    store,
    remote,
    () => Date.UTC(2026, 0, 1),
    async () => undefined,
    [],
  );
  return { monitor, written, release, most: () => most };
}

describe("the HealthMonitor's pass over a workspace", () => {
  it("probes its connections a few at a time, so servers that hang hold up only their own probes", async () => {
    const names = ["hang-1", "hang-2", "a", "b", "c", "d", "e", "f"];
    const { monitor, written, release } = workspace(names);
    const pass = monitor.checkWorkspace(WS);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([...written.keys()].sort()).toEqual(["a", "b", "c", "d", "e", "f"]);
    release();
    await pass;
    expect(written.size).toBe(names.length);
  });

  it("never probes more than PROBES_AT_ONCE of them at a time", async () => {
    const names = Array.from({ length: 10 }, (_, i) => `hang-${i}`);
    const { monitor, written, release, most } = workspace(names);
    const pass = monitor.checkWorkspace(WS);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(most()).toBe(PROBES_AT_ONCE);
    release();
    await pass;
    expect(written.size).toBe(names.length);
  });
});

describe("the HealthMonitor's backoff", () => {
  /** One connection, `crm`, whose server answers when `serverUp` says so. */
  function downConnection(clock: () => number) {
    const state = { health: { up: true, failures: 0 } as TransportHealth, serverUp: false, probes: 0 };
    const store = {
      names: () => ["crm"],
      transport: async () => state.health,
      get: async (_ws: string, name: string) => ({ name, url: "https://crm.example/mcp", disabled: false }),
      writeTransport: async (_ws: string, _name: string, written: TransportHealth) => {
        state.health = written;
      },
    } as unknown as ConnectionStore;
    const remote = {
      reachable: async () => {
        state.probes += 1;
        return state.serverUp ? { ok: true } : { ok: false, detail: "connection refused" };
      },
    } as unknown as RemoteServers;
    const monitor = new HealthMonitor(
      store,
      remote,
      clock,
      async () => undefined,
      [],
      () => 0.999,
    );
    return { monitor, state };
  }

  it("waits for a down connection's retry, and probes it once it is due", async () => {
    let nowMs = Date.UTC(2026, 11, 7, 12, 0, 0);
    const { monitor, state } = downConnection(() => nowMs);
    await monitor.check(WS, "crm");
    expect(state).toMatchObject({ probes: 1, health: { up: false, failures: 1 } });
    await monitor.check(WS, "crm"); // retried in about a second: not yet
    expect(state.probes).toBe(1);
    nowMs += 1_000;
    state.serverUp = true;
    await monitor.check(WS, "crm");
    expect(state).toMatchObject({ probes: 2, health: { up: true, failures: 0 } });
  });

  it("probes a down connection whose retry is further ahead than the longest backoff: the clock was stepped back", async () => {
    let nowMs = Date.UTC(2026, 11, 7, 12, 0, 0);
    const { monitor, state } = downConnection(() => nowMs);
    await monitor.check(WS, "crm"); // down: failure 1, retried in about a second
    nowMs -= 24 * 60 * 60 * 1000; // NTP steps the wall clock back a day
    state.serverUp = true;
    nowMs += 10 * 60 * 1000; // ten minutes later, twice the longest backoff
    // Before, it waited for the retry set a day ahead of this clock: `degraded` for a day.
    await monitor.check(WS, "crm");
    expect(state).toMatchObject({ probes: 2, health: { up: true, failures: 0 } });
  });
});

describe("the ConnectionRevalidator's stop", () => {
  it("waits for a check in flight to write its conclusion, and starts none after", async () => {
    const written: string[] = [];
    let release = () => {};
    const hanging = new Promise<void>((resolve) => {
      release = resolve;
    });
    let opened = 0;
    const store = {
      credential: async () => ({ lapsed: false }),
      get: async (_ws: string, name: string) => ({
        name,
        url: "https://x.example/mcp",
        auth: { kind: "static" },
      }),
      writeCredential: async (_ws: string, name: string, _health: CredentialHealth) =>
        void written.push(name),
    } as unknown as ConnectionStore;
    const remote = {
      source: async () => {
        opened += 1;
        return { describe: () => hanging, roundTrip: async () => undefined, close: async () => undefined };
      },
      credentialRefused: () => false,
    } as unknown as RemoteServers;
    const revalidator = new ConnectionRevalidator(
      store,
      remote,
      () => Date.UTC(2026, 0, 1),
      async () => undefined,
      [],
      createLogger("silent"),
      new ServerLooks(),
    );
    void revalidator.check(WS, "woken");
    await new Promise((resolve) => setTimeout(resolve, 10));
    let stopped = false;
    const stopping = revalidator.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(written).toEqual(["woken"]);
    await revalidator.check(WS, "late");
    expect(opened).toBe(1);
    expect(written).toEqual(["woken"]);
  });
});

describe("the ConnectionRevalidator's wake", () => {
  /** A revalidator over one static connection whose server answers 401, told of a lapse by `changed`. */
  function lapsing(options: { changed: () => Promise<void>; ids?: string[] }) {
    const written: string[] = [];
    const ids = [...(options.ids ?? [])];
    const store = {
      credential: async () => ({ lapsed: false }),
      get: async (_ws: string, name: string) => ({
        id: ids.length > 1 ? ids.shift() : ids[0],
        name,
        url: "https://x.example/mcp",
        auth: { kind: "static" },
      }),
      writeCredential: async (_ws: string, name: string) => void written.push(name),
    } as unknown as ConnectionStore;
    const remote = {
      source: async (_record: unknown, { onStatus }: { onStatus: (status: number) => void }) => ({
        describe: async () => {
          onStatus(401);
          throw new Error("HTTP 401");
        },
        roundTrip: async () => undefined,
        close: async () => undefined,
      }),
      credentialRefused: () => false,
    } as unknown as RemoteServers;
    const { log, lines } = memoryLog();
    const revalidator = new ConnectionRevalidator(
      store,
      remote,
      () => Date.UTC(2026, 0, 1),
      options.changed,
      [],
      log,
      new ServerLooks(),
    );
    return { revalidator, written, lines };
  }

  async function unhandledWhile(run: () => Promise<void>): Promise<unknown[]> {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      await run();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    return unhandled;
  }

  it("ends quietly when the app no longer knows the connection (removed while the server answered)", async () => {
    const { revalidator, lines } = lapsing({
      changed: async () => {
        throw new NotFound("connection_not_found", 'No connection named "gone" in this workspace.');
      },
    });
    expect(await unhandledWhile(async () => revalidator.wake(WS, "gone"))).toEqual([]);
    expect(lines.filter((line) => line.level === 50)).toEqual([]);
  });

  it("logs a check that fails otherwise, and never leaves it unhandled", async () => {
    const { revalidator, lines } = lapsing({
      changed: async () => {
        throw new Error("EIO: the disk failed");
      },
    });
    expect(await unhandledWhile(async () => revalidator.wake(WS, "broken"))).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "connection credential check failed", connection: "broken" }),
    );
  });

  it("writes nothing about a connection removed and added again under its name while the server answered", async () => {
    let told = 0;
    const { revalidator, written } = lapsing({
      changed: async () => {
        told += 1;
      },
      ids: ["con_old", "con_new"],
    });
    await revalidator.check(WS, "replaced");
    expect(written).toEqual([]);
    expect(told).toBe(0);
  });
});
