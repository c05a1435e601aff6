import { readdir, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { s256 } from "../../../src/crypto/pkce.ts";
import { hashSecret } from "../../../src/crypto/secrets.ts";
import type { UserDirectory } from "../../../src/identity/users.ts";
import {
  AuthorizationCodes,
  CODE_TTL_MS,
  type CodeGrant,
  REDEEMED_CODE_KEPT_MS,
} from "../../../src/oauth/codes.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";
import {
  newGrants,
  person,
  RESOURCE,
  silentLog,
  type TestClock,
  tempInstance,
  testClock,
} from "./fixtures.ts";
import { InvalidGrantError, InvalidTargetError } from "./oauth-error-kinds.ts";

const GRANT: CodeGrant = {
  clientId: "atc_0123456789abcdef0123456789abcdef",
  redirectUri: "http://127.0.0.1:9999/cb",
  codeChallenge: s256("v".repeat(43)),
  scopes: ["mcp:read", "mcp:write"],
  resource: RESOURCE,
  principalId: person("alice").id,
};

let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;
let grants: Grants;
let codes: AuthorizationCodes;

beforeEach(async () => {
  const instance = await tempInstance();
  ({ layout, users, cleanup } = instance);
  clock = testClock();
  grants = newGrants(layout, instance.users, clock);
  codes = new AuthorizationCodes(layout, grants, silentLog, clock);
});

afterEach(() => cleanup());

async function codeFiles(): Promise<string[]> {
  try {
    return (await readdir(layout.collectionDir("oauth/codes"))).filter((name) => !name.startsWith("."));
  } catch {
    return [];
  }
}

const accept = () => undefined;
/** A redemption that makes no grant of its own (the tests that need one make it). */
const redeem = (code: string, check: (grant: CodeGrant) => void) =>
  codes.redeem(code, check, async (redeemed) => redeemed);
const startGrant = (grantId: string) =>
  grants.create(
    {
      grantId,
      clientId: GRANT.clientId,
      principalId: GRANT.principalId,
      resource: RESOURCE,
      scopes: GRANT.scopes,
    },
    { refresh: true, consentedAt: clock() },
  );

describe("AuthorizationCodes", () => {
  it("stores a code only as its hash", async () => {
    const code = await codes.issue(GRANT);
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await codeFiles()).toEqual([`${hashSecret(code)}.json`]);
  });

  it("redeems once, giving the grant and a fresh grant id", async () => {
    const code = await codes.issue(GRANT);
    const redeemed = await redeem(code, accept);
    expect(redeemed.grant).toEqual(GRANT);
    expect(redeemed.grantId).toMatch(/^gnt_[0-9a-f]{32}$/);
  });

  it("expires 60 s after it is issued", async () => {
    const early = await codes.issue(GRANT);
    const late = await codes.issue(GRANT);
    clock.advance(CODE_TTL_MS - 1);
    await expect(redeem(early, accept)).resolves.toBeDefined();
    clock.advance(1);
    await expect(redeem(late, accept)).rejects.toBeInstanceOf(InvalidGrantError);
    // The expired code's file went when it was met.
    expect(await codeFiles()).toEqual([`${hashSecret(early)}.json`]);
  });

  it("a second redemption fails and revokes the grant the first one started", async () => {
    const code = await codes.issue(GRANT);
    const { grantId } = await redeem(code, accept);
    await startGrant(grantId);
    await expect(redeem(code, accept)).rejects.toBeInstanceOf(InvalidGrantError);
    expect(grants.isRevoked(grantId)).toBe(true);
  });

  it("a redemption whose grant was never stored is no redemption: the code is redeemed again, for the same grant id, past its 60 s", async () => {
    const code = await codes.issue(GRANT);
    const full = Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    let first = "";
    await expect(
      codes.redeem(code, accept, async ({ grantId }) => {
        first = grantId;
        throw full;
      }),
    ).rejects.toBe(full);
    // Tried again as the 503 said, after Retry-After: 60, so past the code's own 60 s.
    clock.advance(CODE_TTL_MS + 60_000);
    const { grantId } = await codes.redeem(code, accept, async (redeemed) => {
      await startGrant(redeemed.grantId);
      return redeemed;
    });
    expect(grantId).toBe(first);
    expect(grants.isRevoked(grantId)).toBe(false);
    // Once its grant is stored, the code coming back is a replay.
    await expect(redeem(code, accept)).rejects.toBeInstanceOf(InvalidGrantError);
    expect(grants.isRevoked(grantId)).toBe(true);
  });

  it("a second redemption while the first one's grant is being made waits for it, then revokes it", async () => {
    const code = await codes.issue(GRANT);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const exchange = codes.redeem(code, accept, async (redeemed) => {
      await held;
      await startGrant(redeemed.grantId);
      return redeemed;
    });
    const replay = redeem(code, accept);
    release();
    const { grantId } = await exchange;
    await expect(replay).rejects.toBeInstanceOf(InvalidGrantError);
    expect(grants.isRevoked(grantId)).toBe(true);
  });

  it("a code whose grant was stored and revoked still revokes when it comes back after housekeeping, however short the token TTL", async () => {
    const code = await codes.issue(GRANT);
    const shortLived = newGrants(layout, users, clock, undefined, { accessTokenTtlSeconds: 30 });
    const shortCodes = new AuthorizationCodes(layout, shortLived, silentLog, clock);
    const { grantId } = await shortCodes.redeem(code, accept, async (redeemed) => {
      await shortLived.create(
        {
          grantId: redeemed.grantId,
          clientId: GRANT.clientId,
          principalId: GRANT.principalId,
          resource: RESOURCE,
          scopes: GRANT.scopes,
        },
        { refresh: true, consentedAt: clock() },
      );
      return redeemed;
    });
    await shortLived.revoke(grantId);
    clock.advance(5 * 60_000);
    await shortLived.load();
    await expect(shortCodes.redeem(code, accept, async (redeemed) => redeemed)).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(shortLived.isRevoked(grantId)).toBe(true);
  });

  it("a refused check leaves the code unspent", async () => {
    const code = await codes.issue(GRANT);
    await expect(
      redeem(code, () => {
        throw new InvalidTargetError("wrong resource");
      }),
    ).rejects.toBeInstanceOf(InvalidTargetError);
    await expect(redeem(code, accept)).resolves.toBeDefined();
  });

  it("issuing a caller's code again with the identical grant is a no-op; with another grant it is refused", async () => {
    const code = "c".repeat(43);
    expect(await codes.issue(GRANT, code)).toBe(code);
    clock.advance(30_000);
    expect(await codes.issue({ ...GRANT, scopes: [...GRANT.scopes] }, code)).toBe(code);
    clock.advance(30_000);
    // The expiry was not extended by the repeat.
    await expect(redeem(code, accept)).rejects.toBeInstanceOf(InvalidGrantError);
    await expect(codes.issue({ ...GRANT, scopes: ["mcp:read"] }, "d".repeat(43))).resolves.toBeDefined();
    await expect(codes.issue({ ...GRANT, scopes: ["mcp:read"] }, "d".repeat(43))).resolves.toBe(
      "d".repeat(43),
    );
    await expect(codes.issue(GRANT, "d".repeat(43))).rejects.toThrow(/different grant/);
  });

  it("refuses a caller's code too short to be unguessable", async () => {
    await expect(codes.issue(GRANT, "short")).rejects.toThrow(/32–128/);
  });

  it("says a code is stored from its issue until the sweep, redeemed included, so a replay still reaches redeem (ADR 0156)", async () => {
    const code = await codes.issue(GRANT);
    expect(await codes.isStored(code)).toBe(true);
    await redeem(code, accept);
    expect(await codes.isStored(code)).toBe(true);
    expect(await codes.isStored("n".repeat(43))).toBe(false);
    expect(await codes.isStored("short")).toBe(false);
  });

  it("refuses codes it never issued", async () => {
    await expect(redeem("x".repeat(43), accept)).rejects.toBeInstanceOf(InvalidGrantError);
    await expect(redeem("../../etc/passwd", accept)).rejects.toBeInstanceOf(InvalidGrantError);
  });

  it("the boot sweep removes expired codes and keeps live ones", async () => {
    const stale = await codes.issue(GRANT);
    clock.advance(CODE_TTL_MS);
    const fresh = await codes.issue(GRANT);
    await codes.sweep();
    expect(await codeFiles()).toEqual([`${hashSecret(fresh)}.json`]);
    expect(stale).not.toBe(fresh);
  });

  it("a sweep leaves a code it could not read for now (EIO, EMFILE), and its exchange goes on", async () => {
    const code = await codes.issue(GRANT);
    const folder = layout.collectionDir("oauth/codes");
    for (const failure of ["EIO", "EMFILE"]) {
      await journalDuring(() => codes.sweep(), {
        read: (path) =>
          path.startsWith(folder)
            ? Promise.reject(Object.assign(new Error(`${failure}: read failed`), { code: failure }))
            : undefined,
      });
    }
    expect(await codeFiles()).toEqual([`${hashSecret(code)}.json`]);
    const { grantId } = await codes.redeem(code, accept, async (redeemed) => {
      await startGrant(redeemed.grantId);
      return redeemed;
    });
    expect(grants.isRevoked(grantId)).toBe(false);
  });

  it("a sweep removes a code file that is not JSON or not a code, which no exchange can redeem", async () => {
    const live = await codes.issue(GRANT);
    const folder = layout.collectionDir("oauth/codes");
    const junk = ["{not json", "null", "[]", '{"grant": {}}', '{"grant": {}, "expiresAt": "soon"}'];
    for (const [i, text] of junk.entries()) await writeFile(`${folder}/${String(i).repeat(64)}.json`, text);
    await codes.sweep();
    expect(await codeFiles()).toEqual([`${hashSecret(live)}.json`]);
  });

  it("a sweep keeps a redeemed code whose grant was never stored through its retry window", async () => {
    const code = await codes.issue(GRANT);
    await expect(
      codes.redeem(code, accept, async () => {
        throw storageFull();
      }),
    ).rejects.toThrow(/ENOSPC/);
    clock.advance(CODE_TTL_MS + REDEEMED_CODE_KEPT_MS - 1);
    await codes.sweep();
    const { grantId } = await codes.redeem(code, accept, async (redeemed) => {
      await startGrant(redeemed.grantId);
      return redeemed;
    });
    expect(grants.isRevoked(grantId)).toBe(false);
    clock.advance(1);
    await codes.sweep();
    expect(await codeFiles()).toEqual([]);
  });

  it("a sweep waits for a redemption in flight: a retry in the last millisecond of its window is not deleted under it", async () => {
    const code = await codes.issue(GRANT);
    await expect(
      codes.redeem(code, accept, async () => {
        throw storageFull();
      }),
    ).rejects.toThrow(/ENOSPC/);
    clock.advance(CODE_TTL_MS + REDEEMED_CODE_KEPT_MS - 1);
    let swept = false;
    let storedWhileGranting = false;
    const exchange = codes.redeem(code, accept, async (redeemed) => {
      // The window ends while the grant is being made, and the hourly sweep comes.
      clock.advance(1);
      const sweeping = codes.sweep().then(() => {
        swept = true;
      });
      // A sweep that ignored the code's lock runs to its end here; one that takes it waits.
      for (let turn = 0; turn < 1000 && !swept; turn++) await nextTurn();
      storedWhileGranting = await codes.isStored(code);
      await startGrant(redeemed.grantId);
      return { redeemed, sweeping };
    });
    const { redeemed, sweeping } = await exchange;
    await sweeping;
    expect(storedWhileGranting).toBe(true);
    expect(grants.isRevoked(redeemed.grantId)).toBe(false);
    // Judged again once the redemption let go: past its window, it goes.
    expect(await codeFiles()).toEqual([]);
  });
});

function storageFull(): Error {
  return Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
