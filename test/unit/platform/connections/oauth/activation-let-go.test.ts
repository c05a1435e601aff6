import { describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../../src/platform/connections/model.ts";
import { activate } from "../../../../../src/platform/connections/oauth/activation.ts";
import { ConnectionTokens } from "../../../../../src/platform/connections/oauth/connection-tokens.ts";
import { CredentialExchanges } from "../../../../../src/platform/connections/oauth/credential-exchanges.ts";
import type { Flow } from "../../../../../src/platform/connections/oauth/flows.ts";
import { KeyedLock } from "../../../../../src/storage/keyed-lock.ts";
import { NO_CALLER } from "../../../../../src/workspace/access-check.ts";
import { capturingLogger } from "../../../../helpers/atrium.ts";

// RunningApp.drained (src/platform/app.ts): once `letGo` aborts, the app starts no write. An
// activation whose token seal was under way as the stop let go of the root went on to write the
// record, delete the previous credential and write the credential's state (ADR 0122). The vault
// and store stand in so the seal's write can be held at the moment the stop lets go.
/** An activation whose write at `held` (the seal's, or the record's) waits until the test lets it. */
function activationHeldAt(held: "seal" | "record") {
  const writes: string[] = [];
  let release: () => void = () => undefined;
  const holding = new Promise<void>((resolve) => {
    release = resolve;
  });
  let began: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    began = resolve;
  });
  const hold = async (step: "seal" | "record") => {
    if (step !== held) return;
    began();
    await holding;
  };
  const vault = {
    put: async () => {
      await hold("seal");
      writes.push("vault.put");
      return "cred-new";
    },
    replace: async () => void writes.push("vault.replace"),
    open: async () => "{}",
    delete: async (id: string) => void writes.push(`vault.delete ${id}`),
  };
  const record = {
    id: "conn-1",
    name: "docs",
    workspaceId: "ws",
    url: "https://example.test/mcp",
    authorizationGeneration: 0,
    auth: {
      kind: "oauth",
      issuer: "https://as.test",
      tokens: "cred-old",
      activatedAt: "2026-01-01T00:00:00.000Z",
    },
  } as unknown as ConnectionRecord;
  const store = {
    get: async () => record,
    update: async (_key: string, _name: string, change: (r: ConnectionRecord) => ConnectionRecord) => {
      // As the store does: the change is asked for first, and only what it answers is written.
      const changed = change(record);
      await hold("record");
      writes.push("store.update");
      return changed;
    },
    writeCredential: async () => void writes.push("store.writeCredential"),
  };
  const exchanges = new CredentialExchanges();
  const leases = new KeyedLock();
  const log = capturingLogger("debug").log;
  const tokens = new ConnectionTokens({
    vault: vault as never,
    leases,
    clock: () => Date.UTC(2026, 0, 2),
    log,
    fetch: (() => Promise.reject(new Error("no fetch"))) as never,
    exchanges,
    current: async (r) => r,
    stored: () => true,
    authority: async () => {
      throw new Error("no authority");
    },
    refused: () => undefined,
  });
  const flow = {
    workspaceId: "ws",
    name: "docs",
    connectionId: "conn-1",
    generation: 0,
    activatedAt: "2026-01-01T00:00:00.000Z",
  } as unknown as Flow;
  const letGo = new AbortController();
  const activation = exchanges.run(() =>
    activate(
      { stores: { shared: store, personal: store } as never, tokens, leases, clock: () => 0, log },
      flow,
      { accessToken: "a", refreshToken: "r" } as never,
      NO_CALLER,
    ),
  );
  void exchanges.settled(letGo.signal);
  return { writes, reached, release, letGo, activation };
}

describe("an activation the stop lets go of the root during", () => {
  it("starts no record write once the root is let go while its seal is written", async () => {
    const held = activationHeldAt("seal");
    await held.reached;
    // The stop's drain deadline passed; it lets go of the root while the seal's write is under way.
    held.letGo.abort();
    held.release();
    await held.activation.catch(() => undefined);
    // The seal under way may land; nothing starts after it.
    expect(held.writes).toEqual(["vault.put"]);
  });

  it("is answered as stored once its record is written, and starts nothing after", async () => {
    const held = activationHeldAt("record");
    await held.reached;
    held.letGo.abort();
    held.release();
    // The record names the new set: that is the activation. The tidying after it (the lapsed
    // mark, the previous set) is left, logged, and not written once the root is let go.
    await expect(held.activation).resolves.toMatchObject({ auth: { tokens: "cred-new" } });
    expect(held.writes).toEqual(["vault.put", "store.update"]);
  });
});
