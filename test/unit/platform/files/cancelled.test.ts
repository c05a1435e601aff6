import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MIB = 1024 * 1024;

let temp: TempRoot;
let root: string;
let files: FileStore;
let ws: string;

beforeEach(async () => {
  temp = await openTempRoot("cancelled", ALICE);
  ({ root, ws } = temp);
  files = new FileStore(temp.layout.partition("files"), 8 * MIB, temp.events);
});

afterEach(async () => {
  await temp.remove();
});

// A cancelled call of files__write or files__delete (its caller's access ended, its run's timeout)
// changes nothing, even when the tool goes on after its caller was told it failed: the store checks
// the call's signal just before its one rename (adr/0154, amended).

describe("a write whose call is cancelled while it goes", () => {
  it("stores nothing and leaves no staging folder", async () => {
    const cancel = new AbortController();
    const reason = new Error("the caller's access ended");
    const cancelled = files.write(
      ws,
      ALICE,
      { name: "late.bin" },
      new Uint8Array(2 * MIB),
      () => cancel.abort(reason),
      cancel.signal,
    );
    await expect(cancelled).rejects.toBe(reason);
    expect((await files.page(ws, ALICE, { limit: 10 })).files).toEqual([]);
    expect(await readdir(join(root, ws, "files", ALICE))).toEqual([]);
  });
});

describe("a delete whose call was cancelled", () => {
  it("leaves the file in place", async () => {
    const meta = await files.write(ws, ALICE, { name: "kept.txt" }, Buffer.from("kept"));
    const cancel = new AbortController();
    const reason = new Error("the caller's access ended");
    cancel.abort(reason);
    await expect(files.delete(ws, ALICE, meta.id, cancel.signal)).rejects.toBe(reason);
    expect((await files.read(ws, ALICE, meta.id)).content.toString()).toBe("kept");
  });
});
