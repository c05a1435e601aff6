import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FetchLike } from "@modelcontextprotocol/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../../../src/platform/connections/model.ts";
import type { IssuedTo } from "../../../../../src/platform/connections/oauth/client-identity.ts";
import {
  ConnectionTokens,
  NotAuthorized,
  TOKENS_FIELD,
} from "../../../../../src/platform/connections/oauth/connection-tokens.ts";
import { CredentialExchanges } from "../../../../../src/platform/connections/oauth/credential-exchanges.ts";
import type { AuthorizationTarget } from "../../../../../src/platform/connections/oauth/discovery.ts";
import { retold } from "../../../../../src/platform/connections/remote-failure.ts";
import { guardedFetch } from "../../../../../src/sources/guarded-fetch.ts";
import { CredentialStore } from "../../../../../src/storage/credential-store.ts";
import { DiskCache } from "../../../../../src/storage/disk-cache.ts";
import { KeyedLock } from "../../../../../src/storage/keyed-lock.ts";
import { StorageLayout } from "../../../../../src/storage/paths.ts";
import { capturingLogger } from "../../../../helpers/atrium.ts";
import { connectionRecord } from "../../../../helpers/connections.ts";
import { gate } from "../../../../helpers/gate.ts";
import { localTarget, serveLocally } from "../../../../helpers/local-http.ts";

// A connection's token set against a small token endpoint on 127.0.0.1 that rotates refresh
// tokens (or refuses them), with the real sealed credential store.

let root: string;
let vault: CredentialStore;
let server: { base: string; close(): Promise<void> };
let base: string;
let now: number;
let answer: "rotate" | "keep" | "invalid_grant" | "stall" | "quote_client";
/** The `expires_in` a refresh answers, seconds. */
let lifetime: number;
let refreshBodies: URLSearchParams[];
let refused: string[];
/** What each refresh asked its authority for: the client its token set was issued to. */
let askedFor: (IssuedTo | undefined)[];
const captured = capturingLogger("debug");

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-connection-tokens-"));
  vault = await CredentialStore.open(new StorageLayout(root), {
    keys: new Map([[1, randomBytes(32)]]),
    newest: 1,
  });
  now = Date.UTC(2026, 0, 1);
  answer = "rotate";
  lifetime = 300;
  refreshBodies = [];
  refused = [];
  askedFor = [];
  server = await serveLocally((request, body) => {
    refreshBodies.push(new URLSearchParams(body));
    if (answer === "stall")
      return { status: 200, headers: { "content-type": "application/json" }, stall: '{"access_token":' };
    if (answer === "invalid_grant") return { status: 400, json: { error: "invalid_grant" } };
    if (answer === "quote_client") {
      // A careless server that repeats the client credentials it was sent, by either method.
      const basic = Buffer.from((request.headers.authorization ?? "").replace(/^Basic /, ""), "base64");
      const sent = `${basic.toString()} ${new URLSearchParams(body).get("client_secret") ?? ""}`;
      return { status: 401, json: { error: "invalid_client", error_description: `unknown client ${sent}` } };
    }
    const n = refreshBodies.length;
    return {
      status: 200,
      json: {
        access_token: `access-${n}`,
        // "keep": a server that does not rotate refresh tokens answers without one.
        ...(answer === "keep" ? {} : { refresh_token: `refresh-${n}` }),
        token_type: "Bearer",
        expires_in: lifetime,
      },
    };
  });
  base = server.base;
});

afterEach(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

async function setUp(
  vaultFor: Pick<CredentialStore, "put" | "replace" | "open" | "delete"> = vault,
  fetchWith: FetchLike = fetch,
  clientSecret?: string,
  issuedTo?: IssuedTo,
) {
  const record = connectionRecord("ws_0123456789abcdef", {
    name: "notes",
    url: "https://mcp.example/mcp",
    auth: { kind: "oauth", issuer: base, scopes: ["read"] },
    createdAt: new Date(now).toISOString(),
  });
  const exchanges = new CredentialExchanges();
  let stored = true;
  /** The connection's tokens over `over`, as a process (started again) over the same root has them. */
  const tokensOver = (over: Pick<CredentialStore, "put" | "replace" | "open" | "delete">) =>
    new ConnectionTokens({
      exchanges,
      vault: over,
      leases: new KeyedLock(),
      clock: () => now,
      log: captured.log,
      fetch: fetchWith,
      current: async () => record,
      stored: () => stored,
      authority: async (_record, issued) => {
        askedFor.push(issued);
        return {
          target: localTarget(base) as AuthorizationTarget,
          client: {
            info: {
              client_id: issued?.clientId ?? "atc_1",
              ...(clientSecret ? { client_secret: clientSecret } : {}),
            },
            how: "registered",
          },
        };
      },
      refused: (refusedRecord) => void refused.push(refusedRecord.name),
    });
  const tokens = tokensOver(vaultFor);
  /** The connection removed as a remove does it: out of the store's index, then forgotten. */
  const remove = () => {
    stored = false;
    tokens.forget(record);
  };
  const credential = await tokens.seal(record, {
    accessToken: "access-0",
    refreshToken: "refresh-0",
    expiresAt: now + 60_000,
    ...(issuedTo && { issuedTo }),
  });
  record.auth = { ...record.auth, tokens: credential } as ConnectionRecord["auth"];
  return { record, tokens, credential, exchanges, remove, tokensOver };
}

/** A connection signed in again after a call was sent its first access token, as activation.ts does it. */
async function reauthorized() {
  const { record, tokens, credential } = await setUp();
  const sentToCall = await tokens.bearer(record);
  const signedIn = { accessToken: "access-new", refreshToken: "refresh-new", expiresAt: now + 600_000 };
  const current = { ...record, auth: { ...record.auth, tokens: await tokens.seal(record, signedIn) } };
  tokens.superseded(current, credential);
  return { record, tokens, current, sentToCall };
}

/**
 * How many entries the maps and sets `held` keeps as its own fields hold, those of a DiskCache it
 * keeps included: what it keeps in memory.
 */
function entriesHeld(held: object): number {
  return Object.values(held).reduce(
    (sum: number, value) =>
      sum +
      (value instanceof Map || value instanceof Set ? value.size : 0) +
      (value instanceof DiskCache ? entriesHeld(value) : 0),
    0,
  );
}

describe("ConnectionTokens", () => {
  it("hands out the stored token while it is fresh, and refreshes once for 20 callers when it expires", async () => {
    const { record, tokens, credential } = await setUp();
    expect(await tokens.bearer(record)).toBe("access-0");
    now += 60_000;
    const bearers = await Promise.all(Array.from({ length: 20 }, () => tokens.bearer(record)));
    expect(new Set(bearers)).toEqual(new Set(["access-1"]));
    // What the connection's failures are kept from repeating is the token set it now holds.
    expect(tokens.secrets(record)).toEqual(["access-1", "refresh-1"]);
    expect(refreshBodies).toHaveLength(1);
    expect(refreshBodies[0]?.get("refresh_token")).toBe("refresh-0");
    expect(refreshBodies[0]?.get("resource")).toBe(record.url);
    // The rotated refresh token is what is sealed now.
    expect(JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD))).toMatchObject({
      accessToken: "access-1",
      refreshToken: "refresh-1",
    });
  });

  it("seeks the set a refresh replaced until its access token expires: a call under way was sent it", async () => {
    const { record, tokens } = await setUp();
    const sentToCall = await tokens.bearer(record);
    // Inside the expiry margin another request refreshes; access-0 is still valid at the server.
    now += 31_000;
    expect(await tokens.bearer(record)).toBe("access-1");
    expect(tokens.secrets(record)).toEqual(["access-1", "refresh-1", sentToCall, "refresh-0"]);
    now += 29_000;
    expect(tokens.secrets(record)).toEqual(["access-1", "refresh-1"]);
    // One replaced set per connection: the next refresh's replaces it (access-1 has 21 s left).
    now += 250_000;
    expect(await tokens.bearer(record)).toBe("access-2");
    expect(tokens.secrets(record)).toEqual(["access-2", "refresh-2", "access-1", "refresh-1"]);
  });

  // A re-authorization's set replaced the old one without keeping it: an answer echoing the old
  // access token, still valid at the server, reached members (adr/0155, amended).
  it("seeks the set a re-authorization replaced until it expires", async () => {
    const { record, tokens, current, sentToCall } = await reauthorized();
    expect(tokens.secrets(current)).toEqual(["access-new", "refresh-new", sentToCall, "refresh-0"]);
    // A client still serving the record it was made with tells its answers without the old set too.
    expect(tokens.secrets(record)).toEqual([sentToCall, "refresh-0"]);
    now += 60_000;
    expect(tokens.secrets(current)).toEqual(["access-new", "refresh-new"]);
    expect(entriesHeld(tokens)).toBe(1);
  });

  it("forgets the set a re-authorization replaced with the connection", async () => {
    const { tokens, current } = await reauthorized();
    expect(entriesHeld(tokens)).toBe(2);
    tokens.forget(current);
    expect(tokens.secrets(current)).toEqual([]);
    expect(entriesHeld(tokens)).toBe(0);
  });

  it("refreshes as the client the set was issued to, refresh after refresh", async () => {
    const to: IssuedTo = { clientId: "atc_old", how: "registered", redirectUri: "https://old.example/cb" };
    const { record, tokens, credential } = await setUp(vault, fetch, undefined, to);
    now += 60_000;
    expect(await tokens.bearer(record)).toBe("access-1");
    now += lifetime * 1000;
    expect(await tokens.bearer(record)).toBe("access-2");
    expect(askedFor).toEqual([to, to]);
    expect(refreshBodies.map((body) => body.get("client_id"))).toEqual(["atc_old", "atc_old"]);
    expect(JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD))).toMatchObject({ issuedTo: to });
  });

  it("forgets a removed connection's token set, refusal and client secret", async () => {
    const { record, tokens } = await setUp(vault, fetch, "client-secret-7f3a");
    now += 60_000;
    answer = "invalid_grant";
    await expect(tokens.bearer(record)).rejects.toThrow(NotAuthorized);
    expect(tokens.refused(record)).toBe(true);
    expect(tokens.secrets(record)).toEqual(["access-0", "refresh-0", "client-secret-7f3a"]);
    tokens.forget(record);
    expect(tokens.secrets(record)).toEqual([]);
    expect(tokens.refused(record)).toBe(false);
  });

  it("retells a token endpoint's failure by its OAuth code, without the client secret it quoted back", async () => {
    const { record, tokens } = await setUp(vault, fetch, "client-secret-7f3a");
    now += 60_000;
    answer = "quote_client";
    const failure = await tokens.bearer(record).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain("client-secret-7f3a");
    expect(tokens.secrets(record)).toEqual(["access-0", "refresh-0", "client-secret-7f3a"]);
    const told = retold(failure, tokens.secrets(record)) as Error;
    expect(told.message).toBe(
      "The authorization server answered invalid_client; what it wrote is not repeated here.",
    );
    expect(told.message).not.toContain("client-secret-7f3a");
  });

  // RFC 6749 §6: the SDK's refresh keeps the refresh token sent when the answer carries none.
  it("keeps the refresh token it has when the server answers a refresh without a new one", async () => {
    const { record, tokens, credential } = await setUp();
    answer = "keep";
    now += 60_000;
    expect(await tokens.bearer(record)).toBe("access-1");
    expect(tokens.secrets(record)).toEqual(["access-1", "refresh-0"]);
    expect(JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD))).toMatchObject({
      accessToken: "access-1",
      refreshToken: "refresh-0",
    });
    // And it is what the next refresh sends.
    now += lifetime * 1000;
    expect(await tokens.bearer(record)).toBe("access-2");
    expect(refreshBodies.map((body) => body.get("refresh_token"))).toEqual(["refresh-0", "refresh-0"]);
  });

  it("refreshes past a token the server refused, even before it expires", async () => {
    const { record, tokens } = await setUp();
    expect(await tokens.bearer(record, "access-0")).toBe("access-1");
    expect(refreshBodies).toHaveLength(1);
  });

  it("a refused refresh token is tried once, tells the revalidator, and marks the credential refused", async () => {
    const { record, tokens } = await setUp();
    answer = "invalid_grant";
    now += 60_000;
    const attempts = await Promise.allSettled(Array.from({ length: 5 }, () => tokens.bearer(record)));
    expect(attempts.every((a) => a.status === "rejected" && a.reason instanceof NotAuthorized)).toBe(true);
    await expect(tokens.bearer(record)).rejects.toThrow(/re-authorize/);
    expect(refreshBodies).toHaveLength(1);
    expect(refused).toEqual(["notes"]);
    expect(tokens.refused(record)).toBe(true);
  });

  it("a token endpoint that stalls its answer fails the refresh at the deadline and lets the next caller refresh", async () => {
    const guarded = guardedFetch({ allowPrivate: true, timeoutMs: 300, maxResponseBytes: 1024 * 1024 });
    const { record, tokens } = await setUp(vault, guarded);
    answer = "stall";
    now += 60_000;
    await expect(tokens.bearer(record)).rejects.toThrow(/did not answer within 300 ms/);
    answer = "rotate";
    expect(await tokens.bearer(record)).toBe("access-2");
  });

  it("a refreshed token set that cannot be sealed is an error, logged, and its access token is not handed out", async () => {
    const failing = {
      put: vault.put.bind(vault),
      open: vault.open.bind(vault),
      delete: vault.delete.bind(vault),
      replace: async () => {
        throw new Error("ENOSPC: no space left on device");
      },
    };
    const { record, tokens } = await setUp(failing);
    now += 60_000;
    await expect(tokens.bearer(record)).rejects.toThrow("ENOSPC");
    expect(captured.lines.some((line) => String(line.msg).includes("could not be sealed"))).toBe(true);
    expect(JSON.stringify(captured.lines)).not.toContain("access-1");
  });

  // What a graceful stop waits for: no part of a refresh is cut by it (adr/0122, amended;
  // test/integration/connections-oauth-stop.test.ts).
  it("the exchanges are settled once a token request under way has been answered and its answer sealed", async () => {
    const [sent, release] = [gate(), gate()];
    const held: FetchLike = async (url, init) => {
      sent.open();
      await release.promise;
      return fetch(url, init);
    };
    const { record, tokens, credential, exchanges } = await setUp(vault, held);
    now += 60_000;
    const bearer = tokens.bearer(record);
    await sent.promise;
    const letGo = new AbortController();
    const settled = exchanges.settled(letGo.signal);
    release.open();
    await settled;
    expect(JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD))).toMatchObject({
      accessToken: "access-1",
      refreshToken: "refresh-1",
    });
    expect(await bearer).toBe("access-1");
    await exchanges.settled(letGo.signal);
  });

  // Nothing may write in the root once the stop lets it go: the next process may own it.
  it("once the stop lets the root go, no refresh starts, and one answered meanwhile is not sealed", async () => {
    const [sent, release] = [gate(), gate()];
    let holding = true;
    const held: FetchLike = async (url, init) => {
      if (holding) {
        holding = false;
        sent.open();
        await release.promise;
      }
      return fetch(url, init);
    };
    const { record, tokens, credential, exchanges } = await setUp(vault, held);
    now += 60_000;
    const bearer = tokens.bearer(record).catch((error: unknown) => error);
    await sent.promise;
    // The stop waited past its deadline, and lets the root go while the server still holds it.
    const letGo = new AbortController();
    void exchanges.settled(letGo.signal);
    letGo.abort();
    release.open();
    expect(await bearer).toMatchObject({ code: "stopping" });
    expect(refreshBodies).toHaveLength(1);
    expect(JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD))).toMatchObject({
      refreshToken: "refresh-0",
    });
    expect(captured.lines.some((line) => String(line.msg).includes("Atrium had let go"))).toBe(true);
    await expect(tokens.bearer(record)).rejects.toMatchObject({ code: "stopping" });
    expect(refreshBodies).toHaveLength(1);
  });

  it("a refresh under way when its connection is forgotten keeps nothing of it in memory", async () => {
    const [sent, release] = [gate(), gate()];
    const held: FetchLike = async (url, init) => {
      sent.open();
      await release.promise;
      return fetch(url, init);
    };
    const { record, tokens, remove } = await setUp(vault, held, "client-secret-7f3a");
    now += 60_000;
    const bearer = tokens.bearer(record);
    await sent.promise;
    // The connection is removed while the server holds the refresh (its credential not yet deleted).
    remove();
    release.open();
    expect(await bearer).toBe("access-1");
    expect(tokens.secrets(record)).toEqual([]);
    // A caller still holding the removed record reads the sealed set, and keeps it no more.
    expect(await tokens.bearer(record)).toBe("access-1");
    expect(tokens.secrets(record)).toEqual([]);
  });

  // Each remove once added the connection's id to a set kept for the process's life, so that a
  // late refresh cached nothing: memory grew with every removal, for good (adr/0122, amended).
  it("removals leave nothing in memory, a refresh under way at the remove included", async () => {
    const [sent, release] = [gate(), gate()];
    const held: FetchLike = async (url, init) => {
      sent.open();
      await release.promise;
      return fetch(url, init);
    };
    const { record, tokens, remove } = await setUp(vault, held, "client-secret-7f3a");
    now += 60_000;
    const bearer = tokens.bearer(record);
    await sent.promise;
    remove();
    release.open();
    expect(await bearer).toBe("access-1");
    expect(entriesHeld(tokens)).toBe(0);
    expect(await tokens.bearer(record)).toBe("access-1");
    expect(entriesHeld(tokens)).toBe(0);
  });

  // A 401's retry asks for a token past the refused one; a set not yet cached (the first use in the
  // process) is read from the vault first, and a request cut during that read started a refresh
  // nobody waited for (adr/0122, amended).
  it("a request cut while its token set is read at its first use starts no refresh", async () => {
    const { record, tokensOver } = await setUp();
    const cut = new AbortController();
    const cutWhileRead = {
      put: vault.put.bind(vault),
      replace: vault.replace.bind(vault),
      delete: vault.delete.bind(vault),
      open: async (id: string, recordId: string, field: string) => {
        const opened = await vault.open(id, recordId, field);
        cut.abort(new Error("the request's client was closed"));
        return opened;
      },
    };
    // A process started again over the same vault: nothing is cached yet.
    const restarted = tokensOver(cutWhileRead);
    await expect(restarted.bearer(record, "access-0", cut.signal)).rejects.toThrow(
      "the request's client was closed",
    );
    expect(refreshBodies).toHaveLength(0);
    // A retry not cut refreshes past the refused token, as before.
    expect(await restarted.bearer(record, "access-0")).toBe("access-1");
    expect(refreshBodies).toHaveLength(1);
  });

  it("a short-lived token is used for the first half of its life, not refreshed before every request", async () => {
    const { record, tokens } = await setUp();
    lifetime = 20;
    expect(await tokens.bearer(record, "access-0")).toBe("access-1");
    now += 1_000;
    const bearers = [];
    for (let call = 0; call < 5; call += 1) bearers.push(await tokens.bearer(record));
    expect(bearers).toEqual(Array(5).fill("access-1"));
    now += 8_000;
    expect(await tokens.bearer(record)).toBe("access-1");
    now += 2_000;
    expect(await tokens.bearer(record)).toBe("access-2");
    expect(refreshBodies).toHaveLength(2);
  });

  it.each([0, -5, 1e300])(
    "an expires_in of %s records no expiry: the token is used until the server refuses it",
    async (given) => {
      const { record, tokens, credential } = await setUp();
      lifetime = given;
      expect(await tokens.bearer(record, "access-0")).toBe("access-1");
      now += 24 * 60 * 60 * 1000;
      expect(await tokens.bearer(record)).toBe("access-1");
      expect(refreshBodies).toHaveLength(1);
      const sealed = JSON.parse(await vault.open(credential, record.id, TOKENS_FIELD)) as Record<
        string,
        unknown
      >;
      expect(sealed).not.toHaveProperty("expiresAt");
      // The server's 401 is what refreshes it, once.
      expect(await tokens.bearer(record, "access-1")).toBe("access-2");
    },
  );
});
