import { describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../../src/platform/connections/model.ts";
import { activate } from "../../../../../src/platform/connections/oauth/activation.ts";
import { ConnectionTokens } from "../../../../../src/platform/connections/oauth/connection-tokens.ts";
import { CredentialExchanges } from "../../../../../src/platform/connections/oauth/credential-exchanges.ts";
import type { Flow } from "../../../../../src/platform/connections/oauth/flows.ts";
import { KeyedLock } from "../../../../../src/storage/keyed-lock.ts";
import { capturingLogger } from "../../../../helpers/atrium.ts";

// RunningApp.drained (src/platform/app.ts): once `letGo` aborts, the app starts no write. An
// activation whose token seal was under way as the stop let go of the root went on to write the
// record, delete the previous credential and write the credential's state (ADR 0122). The vault
// and store stand in so the seal's write can be held at the moment the stop lets go.
describe("an activation the stop lets go of the root during", () => {
  it("starts no record write once the root is let go", async () => {
    const writes: string[] = [];
    let releasePut: () => void = () => undefined;
    const putHeld = new Promise<void>((resolve) => {
      releasePut = resolve;
    });
    let putStarted: () => void = () => undefined;
    const putBegan = new Promise<void>((resolve) => {
      putStarted = resolve;
    });
    const vault = {
      put: async () => {
        putStarted();
        await putHeld;
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
      ),
    );
    void exchanges.settled(letGo.signal);
    await putBegan;
    // The stop's drain deadline passed; it lets go of the root while the seal's write is under way.
    letGo.abort();
    const writesAtLetGo = writes.length;
    releasePut();
    await activation.catch(() => undefined);
    // Nothing may START after letGo: the in-flight put may finish, but no further writes.
    expect(writes.slice(writesAtLetGo).filter((w) => w !== "vault.put")).toEqual([]);
  });
});
