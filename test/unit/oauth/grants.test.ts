import { readFile, writeFile } from "node:fs/promises";
import { sep } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { UserDirectory } from "../../../src/identity/users.ts";
import type { GrantRecord } from "../../../src/oauth/grant-record.ts";
import { isRefreshTokenShaped, newGrantId } from "../../../src/oauth/grant-tokens.ts";
import { type Grants, MAX_LIVE_GRANTS_PER_PERSON } from "../../../src/oauth/grants.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";
import { gate } from "../../helpers/gate.ts";
import {
  ACCESS_TTL_SECONDS,
  joinedAt,
  newGrants,
  OTHER_RESOURCE,
  OTHER_WORKSPACE,
  person,
  REFRESH_TTL_SECONDS,
  RESOURCE,
  type TestClock,
  tempInstance,
  testClock,
  WORKSPACE,
} from "./fixtures.ts";
import { InvalidGrantError, InvalidScopeError, InvalidTargetError } from "./oauth-error-kinds.ts";

const ALICE = person("alice");
const CLIENT = "atc_0123456789abcdef0123456789abcdef";

let layout: StorageLayout;
let users: UserDirectory;
let cleanup: () => Promise<void>;
let clock: TestClock;
let grants: Grants;

beforeEach(async () => {
  ({ layout, users, cleanup } = await tempInstance());
  clock = testClock();
  grants = newGrants(layout, users, clock);
  await grants.load();
});

afterEach(() => cleanup());

async function start(scopes = ["mcp:read", "mcp:write"]) {
  const grantId = newGrantId();
  const { grant, refreshToken } = await grants.create(
    { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes },
    { refresh: true, consentedAt: clock() },
  );
  return { grant, refreshToken: refreshToken as string };
}

describe("Grants", () => {
  it("stores only the hash of a refresh token, in a file named by the grant", async () => {
    const { grant, refreshToken } = await start();
    expect(refreshToken.startsWith(`${grant.grantId}.`)).toBe(true);
    expect(isRefreshTokenShaped(refreshToken)).toBe(true);
    const stored = await grants.get(grant.grantId);
    expect(JSON.stringify(stored)).not.toContain(refreshToken.split(".")[1]);
    expect(stored?.absoluteExpiresAt).toBe(clock() + REFRESH_TTL_SECONDS * 1000);
  });

  it("rotates the refresh token on every use", async () => {
    const { refreshToken } = await start();
    const first = await grants.refresh(refreshToken, { clientId: CLIENT });
    expect(first.refreshToken).not.toBe(refreshToken);
    expect(first.scopes).toEqual(["mcp:read", "mcp:write"]);
    const second = await grants.refresh(first.refreshToken, { clientId: CLIENT });
    expect(second.refreshToken).not.toBe(first.refreshToken);
  });

  it("a rotated-out token presented again revokes the whole family", async () => {
    const { grant, refreshToken } = await start();
    const next = await grants.refresh(refreshToken, { clientId: CLIENT });
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect(grants.isRevoked(grant.grantId)).toBe(true);
    // The legitimate holder's newer token dies with it.
    await expect(grants.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
    expect((await grants.get(grant.grantId))?.revokedAt).toBe(clock());
  });

  it("an unknown secret for a real grant is refused without revoking it", async () => {
    const { grant, refreshToken } = await start();
    const guess = `${grant.grantId}.${"A".repeat(43)}`;
    await expect(grants.refresh(guess, { clientId: CLIENT })).rejects.toBeInstanceOf(InvalidGrantError);
    expect(grants.isRevoked(grant.grantId)).toBe(false);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).resolves.toBeDefined();
  });

  it("refuses a refresh after the grant's absolute lifetime", async () => {
    const { refreshToken } = await start();
    clock.advance(REFRESH_TTL_SECONDS * 1000 - 1);
    const next = await grants.refresh(refreshToken, { clientId: CLIENT });
    clock.advance(1);
    await expect(grants.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toThrow(
      /end of its lifetime/,
    );
  });

  it("refuses another client's refresh token", async () => {
    const { refreshToken } = await start();
    await expect(
      grants.refresh(refreshToken, { clientId: "atc_ffffffffffffffffffffffffffffffff" }),
    ).rejects.toBeInstanceOf(InvalidGrantError);
  });

  it("lets a refresh narrow scopes but never widen them", async () => {
    const { refreshToken } = await start(["mcp:read"]);
    await expect(
      grants.refresh(refreshToken, { clientId: CLIENT, scopes: ["mcp:read", "mcp:write"] }),
    ).rejects.toBeInstanceOf(InvalidScopeError);
    const narrowed = await grants.refresh(refreshToken, { clientId: CLIENT, scopes: ["mcp:read"] });
    expect(narrowed.scopes).toEqual(["mcp:read"]);
    // The grant keeps what was consented to.
    expect(narrowed.grant.scopes).toEqual(["mcp:read"]);
  });

  it("refuses a refresh for another resource with invalid_target", async () => {
    const { refreshToken } = await start();
    await expect(
      grants.refresh(refreshToken, { clientId: CLIENT, resource: OTHER_RESOURCE }),
    ).rejects.toBeInstanceOf(InvalidTargetError);
    await expect(
      grants.refresh(refreshToken, { clientId: CLIENT, resource: RESOURCE }),
    ).resolves.toBeDefined();
  });

  it("refuses a refresh for a deactivated person", async () => {
    await users.record(ALICE);
    const { refreshToken } = await start();
    await users.setDeactivated(ALICE.id, true);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toThrow(/deactivated/);
  });

  it("counts no consent given before the person's last reactivation, at the exchange or at a refresh", async () => {
    await users.record(ALICE);
    const consent = (consentedAt = clock()) => ({
      grant: {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: ["mcp:read"],
        standingId: users.standingOf(ALICE.id).standingId,
      },
      options: { refresh: true, consentedAt },
    });
    // A grant the deactivation's revocation missed (made while it ran), and a code not yet redeemed.
    const missed = consent();
    const { grant, refreshToken } = await grants.create(missed.grant, missed.options);
    const unredeemed = consent();
    await users.setDeactivated(ALICE.id, true);
    await users.setDeactivated(ALICE.id, false);
    await expect(grants.create(unredeemed.grant, unredeemed.options)).rejects.toThrow(/deactivated since/);
    await expect(grants.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow(
      /deactivated since/,
    );
    expect(grants.isRevoked(grant.grantId)).toBe(true);
    const fresh = consent();
    await expect(grants.create(fresh.grant, fresh.options)).resolves.toBeDefined();
  });

  it("makes no grant for a person who left the workspace, or left and rejoined, since consenting", async () => {
    const joined = new Map<string, number>([[WORKSPACE, clock()]]);
    const members = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    const make = (resource: string, consentedAt: number) =>
      members.create(
        { grantId: newGrantId(), clientId: CLIENT, principalId: ALICE.id, resource, scopes: ["mcp:read"] },
        { refresh: true, consentedAt },
      );
    await expect(make(OTHER_RESOURCE, clock())).rejects.toThrow(/not a member/);
    const consentedAt = clock();
    clock.advance(1000);
    joined.set(WORKSPACE, clock());
    await expect(make(RESOURCE, consentedAt)).rejects.toThrow(/not a member/);
    await expect(make(RESOURCE, clock())).resolves.toBeDefined();
  });

  it("refuses a refresh once its person is no longer a member, and revokes the grant, even if leaving missed it", async () => {
    const joined = new Map<string, number>([[WORKSPACE, clock()]]);
    const members = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    const { grant, refreshToken } = await members.create(
      {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: ["mcp:read"],
      },
      { refresh: true, consentedAt: clock() },
    );
    const next = await members.refresh(refreshToken as string, { clientId: CLIENT });
    joined.delete(WORKSPACE);
    await expect(members.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toThrow(/not a member/);
    expect(members.isRevoked(grant.grantId)).toBe(true);
    // Rejoining does not bring it back: the person consents again.
    clock.advance(1000);
    joined.set(WORKSPACE, clock());
    await expect(members.refresh(next.refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );
  });

  it("a load writes revoked a grant whose person left without it, so a restart cannot bring it back (ADR 0148)", async () => {
    const joined = new Map<string, number>([[WORKSPACE, clock()]]);
    const members = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    const { grant } = await members.create(
      {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: ["mcp:read"],
      },
      { refresh: true, consentedAt: clock() },
    );
    // Removed, and the revocation that goes with it never written (it failed, or never ran).
    joined.delete(WORKSPACE);
    const restarted = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    await restarted.load();
    expect(restarted.isRevoked(grant.grantId)).toBe(true);
    expect((await restarted.get(grant.grantId))?.revokedAt).toEqual(clock());
    // Back in the workspace: the grant's access tokens are still refused (isRevoked), after another restart too.
    clock.advance(1000);
    joined.set(WORKSPACE, clock());
    const again = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    await again.load();
    expect(again.isRevoked(grant.grantId)).toBe(true);
  });

  it("a load writes revoked a grant whose revocation was remembered but not written; one that cannot goes on", async () => {
    const { grant } = await start();
    const refused = vi
      .spyOn(JsonRecords.prototype, "put")
      .mockRejectedValue(Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" }));
    try {
      await expect(grants.revoke(grant.grantId)).rejects.toMatchObject({ code: "EIO" });
      expect(grants.isRevoked(grant.grantId)).toBe(true);
      // Housekeeping meets the same disk: logged, and still refused.
      await grants.load();
    } finally {
      refused.mockRestore();
    }
    expect((await grants.get(grant.grantId))?.revokedAt).toBeUndefined();
    expect(grants.isRevoked(grant.grantId)).toBe(true);
    await grants.load();
    expect((await grants.get(grant.grantId))?.revokedAt).toEqual(clock());
  });

  it("refuses a refresh of a grant made before its person last joined", async () => {
    const joined = new Map<string, number>([[WORKSPACE, clock()]]);
    const members = newGrants(
      layout,
      users,
      clock,
      joinedAt((workspaceId) => joined.get(workspaceId)),
    );
    const { refreshToken } = await members.create(
      {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: ["mcp:read"],
      },
      { refresh: true, consentedAt: clock() },
    );
    clock.advance(1000);
    joined.set(WORKSPACE, clock());
    await expect(members.refresh(refreshToken as string, { clientId: CLIENT })).rejects.toThrow(
      /left it since/,
    );
  });

  it("revocation is remembered across a restart, and dropped once every token it issued has expired", async () => {
    const { grant, refreshToken } = await start();
    await grants.revoke(grant.grantId);
    await expect(grants.refresh(refreshToken, { clientId: CLIENT })).rejects.toBeInstanceOf(
      InvalidGrantError,
    );

    const rebooted = newGrants(layout, users, clock);
    await rebooted.load();
    expect(rebooted.isRevoked(grant.grantId)).toBe(true);

    clock.advance((ACCESS_TTL_SECONDS + 61) * 1000);
    const later = newGrants(layout, users, clock);
    await later.load();
    expect(await later.get(grant.grantId)).toBeUndefined();
  });

  it("a grant id revoked before it is created cannot be created", async () => {
    const grantId = newGrantId();
    await grants.revoke(grantId);
    await expect(
      grants.create(
        { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
        { refresh: true, consentedAt: clock() },
      ),
    ).rejects.toBeInstanceOf(InvalidGrantError);
  });

  it("a revocation by person that runs while a grant is being written ends it: no tokens, revoked on disk", async () => {
    // Held at the grant's first write: the moment a member's removal used to miss, because the
    // grant reached the index only once written.
    const held = gate();
    const reached = gate();
    const write = JsonRecords.prototype.put;
    const spy = vi.spyOn(JsonRecords.prototype, "put").mockImplementation(async function (
      this: JsonRecords<GrantRecord>,
      id: string,
      record: GrantRecord,
    ) {
      if (record.revokedAt === undefined) {
        reached.open();
        await held.promise;
      }
      return write.call(this, id, record);
    });
    try {
      const grantId = newGrantId();
      const creating = grants.create(
        { grantId, clientId: CLIENT, principalId: ALICE.id, resource: RESOURCE, scopes: ["mcp:read"] },
        { refresh: true, consentedAt: clock() },
      );
      await reached.promise;
      const revoking = grants.revokeWhere({ principalId: ALICE.id });
      held.open();
      await expect(creating).rejects.toBeInstanceOf(InvalidGrantError);
      expect(await revoking).toBe(1);
      expect(grants.isRevoked(grantId)).toBe(true);
      expect((await grants.get(grantId))?.revokedAt).toEqual(expect.any(Number));
    } finally {
      spy.mockRestore();
    }
  });

  it("a grant whose first write fails is not left in the index", async () => {
    const spy = vi.spyOn(JsonRecords.prototype, "put").mockRejectedValueOnce(new Error("disk gone"));
    try {
      await expect(start()).rejects.toThrow("disk gone");
    } finally {
      spy.mockRestore();
    }
    expect(await grants.revokeWhere({ principalId: ALICE.id })).toBe(0);
  });

  it("a client holds a live grant until the grant is revoked or its lifetime ends (ADR 0137)", async () => {
    const other = "atc_ffffffffffffffffffffffffffffffff";
    expect(grants.hasLiveGrantOf(CLIENT)).toBe(false);
    const { grant } = await start();
    const ending = await start();
    expect(grants.hasLiveGrantOf(CLIENT)).toBe(true);
    expect(grants.hasLiveGrantOf(other)).toBe(false);
    await grants.revoke(grant.grantId);
    expect(grants.hasLiveGrantOf(CLIENT)).toBe(true);
    clock.advance(REFRESH_TTL_SECONDS * 1000);
    expect(grants.hasLiveGrantOf(CLIENT)).toBe(false);
    expect(grants.isRevoked(ending.grant.grantId)).toBe(false);
  });

  it("revokes by refresh token only for the client that holds it", async () => {
    const { grant, refreshToken } = await start();
    expect(await grants.revokeRefreshToken(refreshToken, "atc_ffffffffffffffffffffffffffffffff")).toBe(false);
    expect(grants.isRevoked(grant.grantId)).toBe(false);
    expect(await grants.revokeRefreshToken(refreshToken, CLIENT)).toBe(true);
    expect(grants.isRevoked(grant.grantId)).toBe(true);
  });

  it("revokes a person's grants in one workspace, a workspace's for everyone, or all of a person's", async () => {
    const BOB = person("bob");
    const make = async (principalId: string, resource: string) =>
      (
        await grants.create(
          { grantId: newGrantId(), clientId: CLIENT, principalId, resource, scopes: ["mcp:read"] },
          { refresh: true, consentedAt: clock() },
        )
      ).grant.grantId;
    const aliceHere = await make(ALICE.id, RESOURCE);
    const aliceThere = await make(ALICE.id, OTHER_RESOURCE);
    const bobHere = await make(BOB.id, RESOURCE);
    const bobThere = await make(BOB.id, OTHER_RESOURCE);
    const live = () =>
      [aliceHere, aliceThere, bobHere, bobThere].filter((id) => !grants.isRevoked(id)).sort();

    expect(await grants.revokeWhere({ principalId: ALICE.id, workspaceId: WORKSPACE })).toBe(1);
    expect(live()).toEqual([aliceThere, bobHere, bobThere].sort());
    expect(await grants.revokeWhere({ workspaceId: OTHER_WORKSPACE })).toBe(2);
    expect(live()).toEqual([bobHere]);
    expect(await grants.revokeWhere({ principalId: BOB.id })).toBe(1);
    expect(live()).toEqual([]);
    // Revocation is written, not only remembered: a restart still refuses them.
    const restarted = newGrants(layout, users, clock);
    await restarted.load();
    expect([aliceHere, aliceThere, bobHere, bobThere].every((id) => restarted.isRevoked(id))).toBe(true);
    await expect(grants.revokeWhere({})).rejects.toThrow(/person or a workspace/);
  });

  it("a grant stored before its workspace was is that of its resource's path, under any public URL", async () => {
    const { grant, refreshToken } = await start();
    // As written before `workspaceId` was stored, under a public URL since changed.
    const file = layout.collectionFile("oauth/families", grant.grantId);
    const { workspaceId: _dropped, ...stored } = JSON.parse(await readFile(file, "utf8")) as GrantRecord;
    await writeFile(file, JSON.stringify({ ...stored, resource: `https://old.example/mcp/${WORKSPACE}` }));
    const moved = newGrants(layout, users, clock, undefined, { publicUrl: "https://new.example" });
    await moved.load();
    expect((await moved.get(grant.grantId))?.workspaceId).toBe(WORKSPACE);
    const refreshed = await moved.refresh(refreshToken, { clientId: CLIENT });
    expect(refreshed.resource).toBe(`https://new.example/mcp/${WORKSPACE}`);
    expect(await moved.revokeWhere({ workspaceId: OTHER_WORKSPACE })).toBe(0);
    expect(await moved.revokeWhere({ principalId: ALICE.id, workspaceId: WORKSPACE })).toBe(1);
    expect(moved.isRevoked(grant.grantId)).toBe(true);
  });

  it("past the cap, a person's new grant revokes their least recently used, whatever its client, and nobody else's", async () => {
    const capped = newGrants(layout, users, clock, undefined, { maxLiveGrantsPerPerson: 3 });
    const make = async (principalId: string, on: Grants = capped) => {
      clock.advance(1000);
      return on.create(
        { grantId: newGrantId(), clientId: CLIENT, principalId, resource: RESOURCE, scopes: ["mcp:read"] },
        { refresh: true, consentedAt: clock() },
      );
    };
    const BOB = person("bob");
    const bobs = await make(BOB.id);
    const [a, b, c] = [await make(ALICE.id), await make(ALICE.id), await make(ALICE.id)];
    clock.advance(1000);
    // Refreshing the oldest makes it the most recently used.
    await capped.refresh(a.refreshToken as string, { clientId: CLIENT });
    const d = await make(ALICE.id);
    const revoked = (ids: string[]) => ids.filter((id) => capped.isRevoked(id));
    const ids = [a, b, c, d].map((made) => made.grant.grantId);
    expect(revoked(ids)).toEqual([b.grant.grantId]);
    expect((await capped.listFor(ALICE.id)).map((g) => g.grantId).sort()).toEqual(
      [a, c, d].map((made) => made.grant.grantId).sort(),
    );
    expect(capped.isRevoked(bobs.grant.grantId)).toBe(false);
    // What was used when is on disk: after a restart the next one out is c.
    const restarted = newGrants(layout, users, clock, undefined, { maxLiveGrantsPerPerson: 3 });
    await restarted.load();
    await make(ALICE.id, restarted);
    expect(ids.filter((id) => restarted.isRevoked(id))).toEqual([b.grant.grantId, c.grant.grantId]);
    expect(MAX_LIVE_GRANTS_PER_PERSON).toBe(100);
  });

  it("listing a person's grants and revoking by person or workspace read only the matching records", async () => {
    const BOB = person("bob");
    const make = (principalId: string, resource: string) =>
      grants.create(
        { grantId: newGrantId(), clientId: CLIENT, principalId, resource, scopes: ["mcp:read"] },
        { refresh: true, consentedAt: clock() },
      );
    for (let i = 0; i < 30; i++) await make(BOB.id, RESOURCE);
    const aliceHere = (await make(ALICE.id, RESOURCE)).grant.grantId;
    const aliceThere = (await make(ALICE.id, OTHER_RESOURCE)).grant.grantId;
    // The index is built at load, as at boot.
    const booted = newGrants(layout, users, clock);
    await booted.load();
    const grantFilesRead = async (work: () => Promise<unknown>) =>
      (await journalDuring(work)).read.filter((path) => path.includes(`${sep}families${sep}`)).length;

    expect(await grantFilesRead(() => booted.listFor(ALICE.id))).toBe(2);
    expect(await grantFilesRead(() => booted.revokeWhere({ workspaceId: OTHER_WORKSPACE }))).toBe(1);
    expect(booted.isRevoked(aliceThere)).toBe(true);
    expect(
      await grantFilesRead(() => booted.revokeWhere({ principalId: ALICE.id, workspaceId: WORKSPACE })),
    ).toBe(1);
    expect(booted.isRevoked(aliceHere)).toBe(true);
    expect(await grantFilesRead(() => booted.listFor(ALICE.id))).toBe(0);
    expect(await booted.listFor(BOB.id)).toHaveLength(30);
  });

  it("without refresh, a grant has no refresh token", async () => {
    const { refreshToken } = await grants.create(
      {
        grantId: newGrantId(),
        clientId: CLIENT,
        principalId: ALICE.id,
        resource: RESOURCE,
        scopes: ["mcp:read"],
      },
      { refresh: false, consentedAt: clock() },
    );
    expect(refreshToken).toBeUndefined();
  });
});
