import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import { newGrantId } from "../../../src/oauth/grant-tokens.ts";
import type { Grants } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { newGrants, person, RESOURCE, type TestClock, tempInstance, testClock } from "./fixtures.ts";
import { InvalidGrantError } from "./oauth-error-kinds.ts";

// oauth.refreshReuseGraceSeconds (ADR 0136): the refresh token a rotation just replaced, from the
// grant's own client within the grace, is answered with the successor that rotation issued;
// anything else rotated out still revokes the whole family.

const GRACE_SECONDS = 30;
const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";
const OTHER_CLIENT = "atc_ffffffffffffffffffffffffffffffff";

let root: string;
let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;

beforeEach(async () => {
  ({ root, layout, users, cleanup } = await tempInstance());
  clock = testClock();
});

afterEach(() => cleanup());

async function grantsWithGrace(refreshReuseGraceSeconds: number): Promise<Grants> {
  const grants = newGrants(layout, users, clock, undefined, { refreshReuseGraceSeconds });
  await grants.load();
  return grants;
}

async function start(grants: Grants): Promise<{ grantId: string; refreshToken: string }> {
  const grantId = newGrantId();
  const { refreshToken } = await grants.create(
    { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
    { refresh: true, consentedAt: clock() },
  );
  return { grantId, refreshToken: refreshToken as string };
}

/** Every byte the grants folder holds. */
async function storedText(): Promise<string> {
  const folder = join(root, "_instance", "oauth", "families");
  const names = await readdir(folder);
  return (await Promise.all(names.map((name) => readFile(join(folder, name), "utf8")))).join("\n");
}

describe("the grace after a refresh token's rotation", () => {
  it("two refreshes of one token at once both answer, with one successor, and the family lives", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const [a, b] = await Promise.all([
      grants.refresh(refreshToken, { clientId: CLIENT }),
      grants.refresh(refreshToken, { clientId: CLIENT }),
    ]);
    expect(a.refreshToken).toBe(b.refreshToken);
    expect(a.refreshToken).not.toBe(refreshToken);
    expect(grants.isRevoked(grantId)).toBe(false);
    const next = await grants.refresh(a.refreshToken, { clientId: CLIENT });
    expect(next.refreshToken).not.toBe(a.refreshToken);
  });

  it("a retry within the grace gets the same successor, which is stored only sealed", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    clock.advance(GRACE_SECONDS * 1000 - 1);
    const again = await grants.refresh(refreshToken, { clientId: CLIENT, scopes: ["mcp:read"] });
    expect(again.refreshToken).toBe(first.refreshToken);
    expect(grants.isRevoked(grantId)).toBe(false);
    const stored = await storedText();
    for (const token of [refreshToken, first.refreshToken]) {
      expect(stored).not.toContain(token.split(".")[1]);
    }
    expect((await grants.get(grantId))?.successorSealed).toEqual(expect.any(String));
  });

  it("the token just replaced, presented once the grace has passed, revokes the whole family", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    clock.advance(GRACE_SECONDS * 1000);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grantId)).toBe(true);
    await expect(grants.refresh(first.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
  });

  it("a retry answered within the grace does not prolong it", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    await grants.refresh(refreshToken, { clientId: CLIENT });
    clock.advance(GRACE_SECONDS * 1000 - 1000);
    await grants.refresh(refreshToken, { clientId: CLIENT });
    clock.advance(1000);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grantId)).toBe(true);
  });

  it("a token older than the one just replaced revokes the whole family, within the grace too", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    const second = await grants.refresh(first.refreshToken, { clientId: CLIENT });
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grantId)).toBe(true);
    await expect(grants.refresh(second.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
  });

  it("the token just replaced, from another client within the grace, revokes the whole family", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    await expect(grants.refresh(refreshToken, { clientId: OTHER_CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grantId)).toBe(true);
    await expect(grants.refresh(first.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
  });

  it("a grace of 0 judges the token just replaced at once, as before, and keeps no successor", async () => {
    const grants = await grantsWithGrace(0);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    expect((await grants.get(grantId))?.successorSealed).toBeUndefined();
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grantId)).toBe(true);
    await expect(grants.refresh(first.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
  });

  it("a grace turned off after a rotation ends it: the token just replaced revokes", async () => {
    const { grantId, refreshToken } = await start(await grantsWithGrace(GRACE_SECONDS));
    const before = await grantsWithGrace(GRACE_SECONDS);
    await before.refresh(refreshToken, { clientId: CLIENT });
    const after = await grantsWithGrace(0);
    await expect(after.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(InvalidGrantError);
    expect(after.isRevoked(grantId)).toBe(true);
  });

  it("with the clock stepped back after a rotation, the token just replaced is refused and the family lives", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const { grantId, refreshToken } = await start(grants);
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    // NTP steps the clock back an hour; 59 minutes later it still reads before the rotation.
    // Before, that counted as within the grace: the token was answered for the whole hour.
    clock.advance(-60 * 60 * 1000);
    clock.advance(59 * 60 * 1000);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    // Refused, not judged as reuse: a clock step is not theft.
    expect(grants.isRevoked(grantId)).toBe(false);
    const next = await grants.refresh(first.refreshToken, { clientId: CLIENT });
    expect(next.refreshToken).not.toBe(first.refreshToken);
  });

  it("with the clock stepped back, another client or an older token still revokes the family", async () => {
    const grants = await grantsWithGrace(GRACE_SECONDS);
    const a = await start(grants);
    await grants.refresh(a.refreshToken, { clientId: CLIENT });
    clock.advance(-1);
    await expect(grants.refresh(a.refreshToken, { clientId: OTHER_CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(a.grantId)).toBe(true);

    const b = await start(grants);
    const first = await grants.refresh(b.refreshToken, { clientId: CLIENT });
    await grants.refresh(first.refreshToken, { clientId: CLIENT });
    clock.advance(-1);
    await expect(grants.refresh(b.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(b.grantId)).toBe(true);
  });
});
