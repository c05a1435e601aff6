import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClientMetadataDocuments } from "../../../src/oauth/client-metadata.ts";
import { ClientRegistry, UNUSED_CLIENT_KEPT_MS } from "../../../src/oauth/clients.ts";
import { UnusedClientCap } from "../../../src/oauth/unused-client-cap.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { capturingLogger } from "../../helpers/atrium.ts";
import { type TestClock, tempInstance, testClock } from "./fixtures.ts";

// ADR 0156: registered clients holding no live grant are kept up to a cap, instance-wide; past it
// registration is refused, and nothing is deleted to make room.

const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };
const CAP = 2;

let root: string;
let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;
let granted: Set<string>;
let lines: Array<Record<string, unknown>>;

beforeEach(async () => {
  ({ root, layout, cleanup } = await tempInstance());
  clock = testClock();
  granted = new Set();
});

afterEach(() => cleanup());

/** A registry as the server makes one, loaded from the data root, its cap judging by `granted`. */
async function registry(): Promise<ClientRegistry> {
  const captured = capturingLogger();
  lines = captured.lines;
  const clients = new ClientRegistry(
    layout,
    new ClientMetadataDocuments({ allowPrivate: false }),
    captured.log,
    clock,
    new UnusedClientCap(CAP, (clientId) => granted.has(clientId)),
  );
  await clients.load();
  return clients;
}

async function stored(): Promise<string[]> {
  const names = await readdir(join(root, "_instance", "oauth", "clients"));
  return names.map((name) => name.replace(/\.json$/, "")).sort();
}

function refusalOf(
  promise: Promise<unknown>,
): Promise<{ errorCode: string; status: number; message: string }> {
  return promise.then(
    () => {
      throw new Error("expected a refusal");
    },
    (error: { errorCode: string; status: number; message: string }) => error,
  );
}

describe("the cap on registered clients without a live grant", () => {
  it("refuses registration N+1 with temporarily_unavailable (503), writes nothing, and logs it once", async () => {
    const clients = await registry();
    const kept = [(await clients.register(NATIVE)).client_id, (await clients.register(NATIVE)).client_id];
    const refused = await refusalOf(clients.register(NATIVE));
    expect(refused).toMatchObject({ errorCode: "temporarily_unavailable", status: 503 });
    expect(refused.message).toMatch(/try again later/);
    await refusalOf(clients.register(NATIVE));
    expect(await stored()).toEqual(kept.sort());
    expect(lines.filter((line) => /maxUnusedClients/.test(String(line.msg)))).toHaveLength(1);
  });

  it("logs a refusal again once the clock steps back behind the last report, rather than staying silent for the step", async () => {
    const clients = await registry();
    await clients.register(NATIVE);
    await clients.register(NATIVE);
    await refusalOf(clients.register(NATIVE));
    // A day's correction: the last report now reads a day ahead of the clock (ADR 0168).
    clock.advance(-24 * 60 * 60 * 1000);
    await refusalOf(clients.register(NATIVE));
    expect(lines.filter((line) => /maxUnusedClients/.test(String(line.msg)))).toHaveLength(2);
  });

  it("does not count a client holding a live grant, and deletes none to make room", async () => {
    const clients = await registry();
    const used = (await clients.register(NATIVE)).client_id;
    granted.add(used);
    await clients.register(NATIVE);
    await clients.register(NATIVE);
    await refusalOf(clients.register(NATIVE));
    expect(await stored()).toContain(used);
    expect(await clients.find(used, "127.0.0.1")).toMatchObject({ client_id: used });
    // Its grant ending makes it count again; the cap still refuses rather than evicting anything.
    granted.delete(used);
    await refusalOf(clients.register(NATIVE));
    expect(await stored()).toHaveLength(3);
  });

  it("counts the clients stored before a restart", async () => {
    const first = await registry();
    await first.register(NATIVE);
    await first.register(NATIVE);
    const restarted = await registry();
    await expect(refusalOf(restarted.register(NATIVE))).resolves.toMatchObject({
      errorCode: "temporarily_unavailable",
    });
  });

  it("gets room back when the sweep deletes an unused client", async () => {
    const clients = await registry();
    await clients.register(NATIVE);
    await clients.register(NATIVE);
    await refusalOf(clients.register(NATIVE));
    clock.advance(UNUSED_CLIENT_KEPT_MS);
    expect(await clients.sweep(() => false)).toHaveLength(2);
    await clients.register(NATIVE);
  });

  it("is freed 30 days after a flood registered, however often a stranger names its clients meanwhile", async () => {
    const clients = await registry();
    const flooded = [(await clients.register(NATIVE)).client_id, (await clients.register(NATIVE)).client_id];
    await refusalOf(clients.register(NATIVE));
    // Named signed out and without a secret, as /oauth/token's client authentication and a
    // signed-out /oauth/authorize name any id, once a day, with the hourly housekeeping between.
    // Before, each lookup was a use: ~14 requests an hour kept 10,000 such clients, and the cap,
    // for ever.
    const HOUR_MS = 60 * 60 * 1000;
    for (let hour = 1; hour * HOUR_MS < UNUSED_CLIENT_KEPT_MS; hour += 1) {
      clock.advance(HOUR_MS);
      if (hour % 24 === 0) for (const id of flooded) await clients.find(id, "203.0.113.9");
      expect(await clients.sweep(() => false)).toEqual([]);
    }
    clock.advance(HOUR_MS);
    expect((await clients.sweep(() => false)).sort()).toEqual([...flooded].sort());
    await clients.register(NATIVE);
  });

  it("lets two registrations at once take only the last room", async () => {
    const clients = await registry();
    await clients.register(NATIVE);
    const outcomes = await Promise.allSettled([clients.register(NATIVE), clients.register(NATIVE)]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(await stored()).toHaveLength(CAP);
  });
});
