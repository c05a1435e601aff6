import type { Dirent } from "node:fs";
import { describe, expect, it } from "vitest";
import { type RecordLocation, RecordLocator } from "../../../src/platform/record-locator.ts";
import type { OwnerEntries } from "../../../src/storage/owned-records.ts";

// The locator keeps every place an id was found (adr/0111): which copy a walk reaches last
// depends on the directory order, so no answer may depend on it.

const WS_A = "ws_aaaaaaaaaaaaaaaa";
const WS_B = "ws_bbbbbbbbbbbbbbbb";
const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const ID = "fl_000000000000000000000001";

const member = () => true;
const there = async () => true;

function owners(...ownerIds: string[]): OwnerEntries[] {
  return ownerIds.map((ownerId) => ({ ownerId, entries: [{ name: ID } as Dirent] }));
}

function walked(order: string[]): RecordLocator {
  const locator = new RecordLocator();
  locator.remember(WS_A, owners(...order), (name) => name);
  return locator;
}

describe("RecordLocator", () => {
  it.each([[[ALICE, BOB]], [[BOB, ALICE]]])(
    "an id under two owners is each owner's own place, whichever the walk found first (%s)",
    async (order) => {
      const locator = walked(order);
      expect(await locator.workspacesOf(ALICE, ID, member, there)).toEqual([WS_A]);
      expect(await locator.workspacesOf(BOB, ID, member, there)).toEqual([WS_A]);
      expect(await locator.workspacesOf("usr_cccccccccccccccccccccccc", ID, member, there)).toEqual([]);
    },
  );

  it("answers a duplicate when a walk first finds its second place, and not at the next walk", () => {
    const locator = new RecordLocator();
    expect(locator.remember(WS_A, owners(ALICE), (name) => name)).toEqual([]);
    expect(locator.remember(WS_A, owners(ALICE, BOB), (name) => name)).toEqual([
      {
        recordId: ID,
        locations: [
          { workspaceId: WS_A, ownerId: ALICE },
          { workspaceId: WS_A, ownerId: BOB },
        ],
      },
    ]);
    expect(locator.remember(WS_A, owners(ALICE, BOB), (name) => name)).toEqual([]);
  });

  it("a delete forgets its own place only", async () => {
    const locator = walked([ALICE, BOB]);
    locator.delete(ID, { workspaceId: WS_A, ownerId: ALICE });
    expect(await locator.workspacesOf(ALICE, ID, member, there)).toEqual([]);
    expect(await locator.workspacesOf(BOB, ID, member, there)).toEqual([WS_A]);
  });

  it("one owner's places in two workspaces are both answered, sorted, until one is gone from disk", async () => {
    const locator = new RecordLocator();
    locator.remember(WS_B, owners(ALICE), (name) => name);
    locator.remember(WS_A, owners(ALICE), (name) => name);
    expect(await locator.workspacesOf(ALICE, ID, member, there)).toEqual([WS_A, WS_B]);
    // A workspace the owner left does not count.
    expect(await locator.workspacesOf(ALICE, ID, (ws) => ws === WS_B, there)).toEqual([WS_B]);
    const onlyB = async ({ workspaceId }: RecordLocation) => workspaceId === WS_B;
    expect(await locator.workspacesOf(ALICE, ID, member, onlyB)).toEqual([WS_B]);
    // Forgotten once seen gone: not looked for again.
    expect(await locator.workspacesOf(ALICE, ID, member, there)).toEqual([WS_B]);
  });
});
