import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Conflict, Forbidden, NotFound } from "../../../../src/errors.ts";
import type { AtriumEvent } from "../../../../src/kernel/events.ts";
import { SkillWriter, type WriteTarget } from "../../../../src/platform/skills/writer.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const DRAFT = { description: "How we write release notes.", body: "# Notes\n\nShort lines.\n" };

let temp: TempRoot;
let writer: SkillWriter;
let ws: string;
let published: AtriumEvent[];

beforeEach(async () => {
  temp = await openTempRoot("skill-events", ALICE);
  const { layout, events, workspaces } = temp;
  ws = temp.ws;
  await workspaces.addMember(ws, BOB, "member");
  writer = new SkillWriter(layout, workspaces, events);
  published = [];
  events.subscribe({ types: ["skill.changed"] }, (event) => void published.push(event));
});

afterEach(async () => {
  await temp.remove();
});

const workspaceTarget = (principalId: string): WriteTarget => ({
  scope: "workspace",
  workspaceId: ws,
  principalId,
  access: NO_CALLER,
});

describe("SkillWriter events", () => {
  it("create, update and delete of a workspace skill publish one skill.changed each, for every member", async () => {
    await writer.create(workspaceTarget(ALICE), "release-notes", DRAFT);
    await writer.update(workspaceTarget(ALICE), "release-notes", {
      intent: "replace_body",
      body: "New body.\n",
    });
    await writer.delete(workspaceTarget(ALICE), "release-notes");
    const base = { type: "skill.changed", workspaceId: ws, scope: "workspace", name: "release-notes" };
    expect(published).toEqual([
      { ...base, change: "created" },
      { ...base, change: "updated" },
      { ...base, change: "deleted" },
    ]);
    expect(published.some((e) => "ownerId" in e)).toBe(false);
  });

  it("a user skill's event is private to its owner", async () => {
    await writer.create(
      { scope: "user", workspaceId: ws, principalId: BOB, access: NO_CALLER },
      "my-style",
      DRAFT,
    );
    expect(published).toEqual([
      {
        type: "skill.changed",
        workspaceId: ws,
        ownerId: BOB,
        scope: "user",
        name: "my-style",
        change: "created",
      },
    ]);
  });

  it("a refused write publishes nothing", async () => {
    await writer.create(workspaceTarget(ALICE), "release-notes", DRAFT);
    published.length = 0;
    await expect(writer.create(workspaceTarget(ALICE), "release-notes", DRAFT)).rejects.toBeInstanceOf(
      Conflict,
    );
    // The role check throws before any promise exists, so it is called inside one here.
    await expect((async () => writer.create(workspaceTarget(BOB), "other", DRAFT))()).rejects.toBeInstanceOf(
      Forbidden,
    );
    await expect(writer.delete(workspaceTarget(ALICE), "missing")).rejects.toBeInstanceOf(NotFound);
    await expect(
      writer.create(workspaceTarget(ALICE), "bad", { description: "", body: "x" }),
    ).rejects.toThrow();
    expect(published).toEqual([]);
  });
});
