import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../../src/platform/connections/model.ts";
import { ConnectionTokens } from "../../../../../src/platform/connections/oauth/connection-tokens.ts";
import { CredentialExchanges } from "../../../../../src/platform/connections/oauth/credential-exchanges.ts";
import type { AuthorizationTarget } from "../../../../../src/platform/connections/oauth/discovery.ts";
import { CredentialStore } from "../../../../../src/storage/credential-store.ts";
import { KeyedLock } from "../../../../../src/storage/keyed-lock.ts";
import { StorageLayout } from "../../../../../src/storage/paths.ts";
import { capturingLogger } from "../../../../helpers/atrium.ts";
import { connectionRecord } from "../../../../helpers/connections.ts";
import { holdingReadAnswer } from "../../../../helpers/held-read.ts";
import { localTarget, serveLocally } from "../../../../helpers/local-http.ts";

// ConnectionTokens opens a token set on its first use outside the connection's lease, and kept it
// whenever the open came back. A refresh's reseal landing meanwhile had the replaced set put back
// in memory; a re-authorization's discard landing meanwhile left the discarded set in memory until
// the process ended (ADR 0155). A read a write overtook keeps nothing (DiskCache, ADR 0162).

const now = Date.UTC(2026, 0, 1);
let root: string;
let layout: StorageLayout;
let vault: CredentialStore;
let server: { base: string; close(): Promise<void> };
let refreshes: number;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-connection-tokens-overtaken-"));
  layout = new StorageLayout(root);
  vault = await CredentialStore.open(layout, { keys: new Map([[1, randomBytes(32)]]), newest: 1 });
  refreshes = 0;
  server = await serveLocally(() => {
    refreshes += 1;
    return {
      status: 200,
      json: {
        access_token: `access-${refreshes}`,
        refresh_token: `refresh-${refreshes}`,
        token_type: "Bearer",
        expires_in: 300,
      },
    };
  });
});

afterEach(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

function connectionTokens(record: ConnectionRecord): ConnectionTokens {
  return new ConnectionTokens({
    exchanges: new CredentialExchanges(),
    vault,
    leases: new KeyedLock(),
    clock: () => now,
    log: capturingLogger("debug").log,
    fetch,
    current: async () => record,
    stored: () => true,
    authority: async () => ({
      target: localTarget(server.base) as AuthorizationTarget,
      client: { info: { client_id: "atc_1" }, how: "registered" },
    }),
    refused: () => undefined,
  });
}

/** A connection whose token set is sealed, and its tokens as a process that has not opened it yet has them. */
async function sealedConnection() {
  const record = connectionRecord("ws_0123456789abcdef", {
    name: "notes",
    url: "https://mcp.example/mcp",
    auth: { kind: "oauth", issuer: server.base, scopes: ["read"] },
  });
  const credential = await connectionTokens(record).seal(record, {
    accessToken: "access-0",
    refreshToken: "refresh-0",
    expiresAt: now + 600_000,
  });
  record.auth = { ...record.auth, tokens: credential } as ConnectionRecord["auth"];
  return {
    record,
    credential,
    tokens: connectionTokens(record),
    file: layout.collectionFile("credentials", credential),
  };
}

it("a set opened outside the lease while a refresh reseals it is not kept: the refreshed one is", async () => {
  const { record, tokens, file } = await sealedConnection();
  await holdingReadAnswer(file, async (held) => {
    const firstUse = tokens.bearer(record);
    await held.reached;
    // A call whose access token the server refused: refreshed under the lease, and resealed.
    expect(await tokens.bearer(record, "access-0")).toBe("access-1");
    held.release();
    expect(await firstUse).toBe("access-0"); // read before the reseal: answered as it stood then
  });

  expect(await tokens.bearer(record)).toBe("access-1");
  expect(refreshes).toBe(1);
});

it("a set opened while a re-authorization discards it is not held in memory after", async () => {
  const { record, credential, tokens, file } = await sealedConnection();
  await holdingReadAnswer(file, async (held) => {
    const firstUse = tokens.bearer(record);
    await held.reached;
    // A re-authorization: the record names a new set, and the one it replaced is discarded.
    tokens.superseded(record, credential);
    await tokens.discard(credential);
    held.release();
    expect(await firstUse).toBe("access-0");
  });

  // What is held for the old set: nothing, neither as the set of its id nor as a replaced one.
  expect(tokens.secrets(record)).toEqual([]);
});
