import { existsSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceNotFound } from "../../../../src/errors.ts";
import { type ConnectionGrant, GrantStore } from "../../../../src/platform/connections/grants.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import type { Member } from "../../../../src/workspace/model.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The grants file of a workspace (ADR 0042): a cache of disk, and a grant counts only from its
// holder's current membership.

const OWNER = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
let temp: TempRoot;

function grant(at: string): ConnectionGrant {
  return { principalId: BOB, connection: "my_notes", grantedBy: OWNER, grantedAt: at };
}

function member(addedAt: string): Member {
  return { principalId: BOB, role: "member", addedAt };
}

/** Bob as a member since the first of January. */
const JOINED = member("2026-01-01T00:00:00.000Z");

function store(): GrantStore {
  return new GrantStore(temp.layout.partition("connections"));
}

beforeEach(async () => {
  temp = await openTempRoot("grants", OWNER);
});

afterEach(async () => {
  await temp.remove();
});

describe("GrantStore", () => {
  it("a grant counts for its holder and connection only, and not once revoked", async () => {
    const grants = store();
    await grants.add(temp.ws, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER);
    const bob = member("2026-01-01T00:00:00.000Z");
    expect(await grants.has(temp.ws, bob, "my_notes")).toBe(true);
    expect(await grants.has(temp.ws, bob, "my_mail")).toBe(false);
    expect(await grants.has(temp.ws, { ...bob, principalId: OWNER }, "my_notes")).toBe(false);
    expect(await grants.remove(temp.ws, (g) => g.principalId === BOB, NO_CALLER)).toBe(1);
    expect(await grants.has(temp.ws, bob, "my_notes")).toBe(false);
  });

  it("a grant made before its holder last joined does not count: leaving ended it", async () => {
    const grants = store();
    await grants.add(temp.ws, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER);
    expect(await grants.has(temp.ws, member("2026-01-03T00:00:00.000Z"), "my_notes")).toBe(false);
  });

  it("adding the same grant twice keeps the first and says so", async () => {
    const grants = store();
    expect((await grants.add(temp.ws, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER)).created).toBe(
      true,
    );
    const again = await grants.add(temp.ws, grant("2026-01-05T00:00:00.000Z"), JOINED, NO_CALLER);
    expect(again).toEqual({ grant: grant("2026-01-02T00:00:00.000Z"), created: false });
    expect(await grants.list(temp.ws)).toHaveLength(1);
  });

  it("a grant from an earlier membership is replaced by a new one, not answered as existing", async () => {
    const grants = store();
    await grants.add(temp.ws, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER);
    // Bob left and came back on the 3rd; the tidy on leaving never ran, so the old grant is there.
    const rejoined = member("2026-01-03T00:00:00.000Z");
    const again = await grants.add(temp.ws, grant("2026-01-04T00:00:00.000Z"), rejoined, NO_CALLER);
    expect(again).toEqual({ grant: grant("2026-01-04T00:00:00.000Z"), created: true });
    expect(await grants.list(temp.ws)).toEqual([grant("2026-01-04T00:00:00.000Z")]);
    expect(await grants.has(temp.ws, rejoined, "my_notes")).toBe(true);
  });

  it("a grant written behind this store's cache is found: a miss rereads the file", async () => {
    const reader = store();
    expect(await reader.list(temp.ws)).toEqual([]);
    await store().add(temp.ws, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER);
    expect(await reader.has(temp.ws, member("2026-01-01T00:00:00.000Z"), "my_notes")).toBe(true);
  });

  it("a workspace whose folder is gone is refused, and nothing is created for it", async () => {
    const gone = "ws_ffffffffffffffff";
    await expect(
      store().add(gone, grant("2026-01-02T00:00:00.000Z"), JOINED, NO_CALLER),
    ).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(existsSync(temp.layout.workspaceDir(gone))).toBe(false);
  });
});
