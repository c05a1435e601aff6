import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import type { ConnectionSettings } from "../../../../src/platform/connections/config.ts";
import {
  forgetArchivedConnections,
  liveWorkspacesWithConnections,
} from "../../../../src/platform/connections/live-workspaces.ts";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import { TOKENS_FIELD } from "../../../../src/platform/connections/oauth/connection-tokens.ts";
import { connectionOAuth } from "../../../../src/platform/connections/oauth/wiring.ts";
import { ServerLooks } from "../../../../src/platform/connections/server-looks.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { CredentialStore } from "../../../../src/storage/credential-store.ts";
import { KeyedLock } from "../../../../src/storage/keyed-lock.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// An archived workspace's connections are let go at its archive (the connections app's `archived`,
// which the archive route calls before it answers: workspace-archive-apps.test.ts). The health
// loops' look did it before, so an OAuth connection's token set (the one it replaced included),
// client secret and discovery stayed in memory until either loop's next pass.

const ALICE = `usr_${"a".repeat(24)}`;
const NOW = Date.UTC(2026, 11, 7);

let temp: TempRoot;

beforeEach(async () => {
  temp = await openTempRoot("live-workspaces", ALICE);
});

afterEach(async () => {
  await temp.remove();
});

/** The connections app's store and OAuth side over a real vault, as app.ts wires them. */
async function wired() {
  const store = new ConnectionStore(temp.layout.partition("connections"));
  const vault = await CredentialStore.open(temp.layout, { keys: new Map([[1, randomBytes(32)]]), newest: 1 });
  const oauth = connectionOAuth({
    settings: {
      allowPrivateAddresses: false,
      requestTimeoutMs: 5_000,
      oauthClients: [],
    } as unknown as ConnectionSettings,
    stores: { shared: store, personal: new ConnectionStore(temp.layout.partition("personal")) },
    vault,
    looks: { shared: new ServerLooks(), personal: new ServerLooks() },
    leases: new KeyedLock(),
    layout: temp.layout,
    clock: () => NOW,
    log: createLogger("silent"),
    publicUrl: () => "https://atrium.example",
    workspaces: { roleOf: () => "admin" },
    users: { isDeactivated: () => false },
    activated: async () => undefined,
    refused: () => undefined,
  });
  /** An authorized OAuth connection of `workspaceId`, served: its token set opened and held. */
  const authorized = async (workspaceId: string, access: string): Promise<ConnectionRecord> => {
    const record = connectionRecord(workspaceId, {
      auth: { kind: "oauth", issuer: "https://as.example", scopes: ["read"] },
    });
    const tokens = await vault.put(
      record.id,
      TOKENS_FIELD,
      JSON.stringify({ accessToken: access, refreshToken: `${access}-refresh`, expiresAt: NOW + 3_600_000 }),
    );
    await store.create(
      { ...record, auth: { ...record.auth, tokens } } as ConnectionRecord,
      undefined,
      NO_CALLER,
    );
    const stored = await store.get(workspaceId, record.name);
    expect(await oauth.bearers.bearer(stored)).toBe(access);
    return stored;
  };
  return { store, oauth, authorized };
}

describe("an archived workspace's connections", () => {
  it("let go of their OAuth secrets held in memory at the archive, and only its", async () => {
    const { store, oauth, authorized } = await wired();
    const other = (await temp.workspaces.create("Other", ALICE)).id;
    const archived = await authorized(temp.ws, "access-archived");
    const kept = await authorized(other, "access-kept");
    expect(oauth.bearers.secrets(archived)).toEqual(["access-archived", "access-archived-refresh"]);
    await temp.workspaces.archive(temp.ws, ALICE);

    forgetArchivedConnections(store, oauth.authorizer, temp.ws);
    expect(store.names(temp.ws)).toEqual([]);
    expect(oauth.bearers.secrets(archived)).toEqual([]);
    expect(oauth.bearers.secrets(kept)).toEqual(["access-kept", "access-kept-refresh"]);
    // Told again (two archives admitted at once both end it), it has nothing more to let go.
    forgetArchivedConnections(store, oauth.authorizer, temp.ws);
    expect(oauth.bearers.secrets(kept)).toEqual(["access-kept", "access-kept-refresh"]);
  });

  it("still indexed (a create that landed as the archive did) are let go by the health loops' look, never probed", async () => {
    const { store, oauth, authorized } = await wired();
    const other = (await temp.workspaces.create("Other", ALICE)).id;
    await authorized(temp.ws, "access-archived");
    const kept = await authorized(other, "access-kept");
    await temp.workspaces.archive(temp.ws, ALICE);
    const live = liveWorkspacesWithConnections(
      store,
      oauth.authorizer,
      (workspaceId) => temp.workspaces.get(workspaceId) !== undefined,
    );
    expect([...live]).toEqual([other]);
    expect(store.names(temp.ws)).toEqual([]);
    expect(oauth.bearers.secrets(kept)).toEqual(["access-kept", "access-kept-refresh"]);
  });
});
