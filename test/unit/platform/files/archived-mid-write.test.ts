import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceNotFound } from "../../../../src/errors.ts";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { listTree } from "../../../helpers/fs-tree.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// Archiving moves a workspace's folder to `_archive/` while a write into it may still run: the
// write's staging folder goes with it, where no recovery pass looks (adr/0024). The write answers
// as any request to an archived workspace is answered, and removes its staging folder there.
const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MIB = 1024 * 1024;

let temp: TempRoot;
let files: FileStore;
let ws: string;

beforeEach(async () => {
  temp = await openTempRoot("file-archived", ALICE);
  ws = temp.ws;
  files = new FileStore(temp.layout.partition("files"), 8 * MIB, temp.events, new FakeTime().clock);
});

afterEach(async () => {
  await temp.remove();
});

/** Every writer's temp entry anywhere under the root, the archive included. */
async function leftovers(): Promise<string[]> {
  return (await listTree(temp.root)).filter((path) =>
    path.split("/").some((part) => part.startsWith(".tmp-")),
  );
}

describe("a write whose workspace is archived while it runs", () => {
  it("files__write's path: WorkspaceNotFound, and nothing of it left, in the archive or anywhere", async () => {
    let archived = false;
    const written = files.write(ws, ALICE, { name: "w.bin" }, randomBytes(3 * MIB), NO_CALLER, async () => {
      if (archived) return;
      archived = true;
      await temp.workspaces.archive(ws, ALICE);
    });
    await expect(written).rejects.toBeInstanceOf(WorkspaceNotFound);
    expect(archived).toBe(true);
    expect(await leftovers()).toEqual([]);
  });

  it("an upload: WorkspaceNotFound, and nothing of its body left, in the archive or anywhere", async () => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 2) await temp.workspaces.archive(ws, ALICE);
        if (sent === 4) return controller.close();
        sent += 1;
        controller.enqueue(new Uint8Array(randomBytes(MIB)));
      },
    });
    await expect(files.upload(ws, ALICE, { name: "u.bin" }, body, NO_CALLER)).rejects.toBeInstanceOf(
      WorkspaceNotFound,
    );
    expect(await leftovers()).toEqual([]);
  });
});
