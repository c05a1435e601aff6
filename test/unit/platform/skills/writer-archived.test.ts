import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceNotFound } from "../../../../src/errors.ts";
import { SkillWriter } from "../../../../src/platform/skills/writer.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { type FsReplacement, withFsHook } from "../../../helpers/fs-hook.ts";
import { listTree } from "../../../helpers/fs-tree.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Archiving moves a workspace's folder to `_archive/` while a skill's save into it may still run:
// a new skill's staging folder goes with it, where no recovery pass looks (adr/0024). The save
// answers as any request to an archived workspace is, and removes its staging folder there, as a
// file's create does (test/unit/platform/files/archived-mid-write.test.ts).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const DRAFT = { description: "How we write.", body: "Plainly." };

type Watched = "mkdir" | "stat" | "open";
/** Any of the three, as one shape: each takes a path first and answers a promise. */
type WatchedCall = (path: unknown, ...rest: unknown[]) => Promise<unknown>;

let temp: TempRoot;
let writer: SkillWriter;
const target = () =>
  ({ scope: "workspace", workspaceId: temp.ws, principalId: ALICE, access: NO_CALLER }) as const;

beforeEach(async () => {
  temp = await openTempRoot("skill-archived", ALICE);
  writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
});

afterEach(() => temp.remove());

/** Runs `work`, archiving the workspace once, right after the first `op` on a path `when` matches. */
async function archivedAfter<T>(op: Watched, when: RegExp, work: () => Promise<T>): Promise<T> {
  let archived = false;
  try {
    return await withFsHook(
      op,
      (real) => {
        const call = real as WatchedCall;
        const hooked: WatchedCall = async (path, ...rest) => {
          const done = await call(path, ...rest);
          if (!archived && when.test(String(path))) {
            archived = true;
            await temp.workspaces.archive(temp.ws, ALICE);
          }
          return done;
        };
        return hooked as FsReplacement<Watched>;
      },
      work,
    );
  } finally {
    expect(archived, `the workspace was archived after a ${op} of ${when}`).toBe(true);
  }
}

/** Every writer's temp entry anywhere under the root, the archive included. */
async function leftovers(): Promise<string[]> {
  return (await listTree(temp.root)).filter((path) =>
    path.split("/").some((part) => part.startsWith(".tmp-")),
  );
}

describe("a workspace skill's save whose workspace is archived while it runs", () => {
  it("a create archived once its staging folder is made: WorkspaceNotFound, and no staging folder left", async () => {
    const created = archivedAfter("mkdir", /\/skills\/\.tmp-style-/, () =>
      writer.create(target(), "style", DRAFT),
    );
    await expect(created).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("a create archived once committed, before its version is recorded: WorkspaceNotFound", async () => {
    const created = archivedAfter("mkdir", /\/skills\/\.history$/, () =>
      writer.create(target(), "style", DRAFT),
    );
    await expect(created).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("an update archived before it writes: WorkspaceNotFound", async () => {
    await writer.create(target(), "style", DRAFT);
    // Once the update has found the skill's folder (its stat), before it writes into it.
    const updated = archivedAfter("stat", /\/skills\/style$/, () =>
      writer.update(target(), "style", { intent: "replace_body", body: "Shorter." }),
    );
    await expect(updated).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("an update archived once its new SKILL.md's temp file is open: WorkspaceNotFound, and no temp file in the archive", async () => {
    await writer.create(target(), "style", DRAFT);
    // The temp file went to `_archive/` with the workspace, where no recovery pass walks.
    const updated = archivedAfter("open", /\/skills\/style\/\.tmp-SKILL\.md-/, () =>
      writer.update(target(), "style", { intent: "replace_body", body: "Shorter." }),
    );
    await expect(updated).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("an update archived once its version's temp file is open: WorkspaceNotFound, and no temp file in the archive", async () => {
    await writer.create(target(), "style", DRAFT);
    const updated = archivedAfter("open", /\/skills\/\.history\/style\/\.tmp-2\.md-/, () =>
      writer.update(target(), "style", { intent: "replace_body", body: "Shorter." }),
    );
    await expect(updated).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("an update archived once its version's metadata temp file is open: WorkspaceNotFound, and no temp file in the archive", async () => {
    await writer.create(target(), "style", DRAFT);
    const updated = archivedAfter("open", /\/skills\/\.history\/style\/\.tmp-2\.json-/, () =>
      writer.update(target(), "style", { intent: "replace_body", body: "Shorter." }),
    );
    await expect(updated).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });

  it("a create archived once its version's temp file is open: WorkspaceNotFound, and no temp file in the archive", async () => {
    const created = archivedAfter("open", /\/skills\/\.history\/style\/\.tmp-1\.md-/, () =>
      writer.create(target(), "style", DRAFT),
    );
    await expect(created).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(await leftovers()).toEqual([]);
  });
});
