import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Connections } from "../../../../src/platform/connections/connections.ts";
import type { ConnectionRecord } from "../../../../src/platform/connections/model.ts";
import { PersonalConnections } from "../../../../src/platform/connections/personal.ts";
import { createPersonalStore } from "../../../../src/platform/connections/personal-store.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES, photograph } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { CredentialStore } from "../../../../src/storage/credential-store.ts";
import { makeFolderPathIfMissing } from "../../../../src/storage/folders.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { inertConnectionsDeps } from "../../../helpers/connections-deps.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A remove learns which sealed credentials to delete from the record it removes. Read before the
// connection's lock, that was a copy an activation (oauth/activation.ts) could replace while the
// remove waited for the lock: its newly sealed tokens — a live refresh token — stayed in the
// credential store for good, bound to a record that no longer exists.

const ADMIN = `usr_${"a".repeat(24)}`;
const TOKENS_FIELD = "oauth.tokens";

let temp: TempRoot;
let vault: CredentialStore;

function snapshot() {
  const taken = photograph(
    [],
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
  return taken.snapshot;
}

function deps(store: ConnectionStore) {
  return inertConnectionsDeps(store, { vault, layout: temp.layout });
}

/** An OAuth connection holding sealed tokens, and how the service removes it. */
async function authorized(personal: boolean) {
  const store = personal
    ? createPersonalStore(temp.layout)
    : new ConnectionStore(temp.layout.partition("connections"));
  const id = `con_${"c".repeat(24)}`;
  const tokens = await vault.put(id, TOKENS_FIELD, JSON.stringify({ refresh_token: "first" }));
  const record = connectionRecord(temp.ws, {
    id,
    ...(personal ? { owner: ADMIN } : {}),
    auth: {
      kind: "oauth",
      issuer: "https://as.example.com",
      scopes: [],
      tokens,
      activatedAt: "2026-12-07T00:00:00.000Z",
    },
  });
  if (personal) await makeFolderPathIfMissing(temp.layout.userConnectionsDir(ADMIN));
  await store.create(record, snapshot(), NO_CALLER);
  const key = personal ? ADMIN : temp.ws;
  const remove = personal
    ? () => new PersonalConnections(deps(store)).remove(ADMIN, "srv")
    : () => new Connections(deps(store)).remove(temp.ws, ADMIN, "srv");
  return { store, key, record, remove };
}

beforeEach(async () => {
  temp = await openTempRoot("connections-remove", ADMIN);
  vault = await CredentialStore.open(temp.layout, { keys: new Map([[1, randomBytes(32)]]), newest: 1 });
});

afterEach(async () => {
  await temp.remove();
});

describe("a remove while a re-authorization swaps in newly sealed tokens", () => {
  it.each([
    ["a workspace connection", false],
    ["a member's personal connection", true],
  ] as const)("%s: no sealed token set outlives it", async (_, personal) => {
    const { store, key, record, remove } = await authorized(personal);
    const renewed = await vault.put(record.id, TOKENS_FIELD, JSON.stringify({ refresh_token: "second" }));
    // activate()'s swap, under the connection's lock, queued before the remove takes it; activate
    // then discards the token set it replaced.
    const activating = store
      .update(
        key,
        "srv",
        (current) => ({
          ...current,
          authorizationGeneration: current.authorizationGeneration + 1,
          auth: { ...current.auth, tokens: renewed } as ConnectionRecord["auth"],
        }),
        undefined,
        NO_CALLER,
      )
      .then(() => vault.delete((record.auth as { tokens: string }).tokens));
    const removing = remove();
    await Promise.all([activating, removing]);
    expect(store.names(key)).toEqual([]);
    expect(vault.count()).toBe(0);
  });
});
