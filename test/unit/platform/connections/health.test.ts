import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import {
  ConnectionRevalidator,
  HealthMonitor,
  PROBES_AT_ONCE,
} from "../../../../src/platform/connections/health.ts";
import type { CredentialHealth, TransportHealth } from "../../../../src/platform/connections/model.ts";
import type { RemoteServers } from "../../../../src/platform/connections/remote.ts";
import type { ConnectionStore } from "../../../../src/platform/connections/store.ts";

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
      createLogger("silent"),
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
