import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileStore } from "../../../../src/platform/files/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MIB = 1024 * 1024;

let temp: TempRoot;
let root: string;
let files: FileStore;
let ws: string;

beforeEach(async () => {
  temp = await openTempRoot("progress", ALICE);
  ({ root, ws } = temp);
  files = new FileStore(temp.layout.partition("files"), 8 * MIB, temp.events);
});

afterEach(async () => {
  await temp.remove();
});

describe("a write that reports progress", () => {
  it("reports each MiB as it reaches the file, then the whole, and stores the same bytes", async () => {
    const content = new Uint8Array(2 * MIB + 5).map((_, i) => i % 251);
    const reports: Array<[number, number]> = [];
    const meta = await files.write(ws, ALICE, { name: "big.bin" }, content, NO_CALLER, (written, total) => {
      reports.push([written, total]);
    });
    expect(reports).toEqual([
      [MIB, content.byteLength],
      [2 * MIB, content.byteLength],
      [2 * MIB + 5, content.byteLength],
    ]);
    const stored = await files.read(ws, ALICE, meta.id);
    expect(createHash("sha256").update(stored.content).digest("hex")).toBe(
      createHash("sha256").update(content).digest("hex"),
    );
  });

  it("an empty file is one report of zero of zero", async () => {
    const reports: Array<[number, number]> = [];
    await files.write(ws, ALICE, { name: "empty.txt" }, new Uint8Array(0), NO_CALLER, (written, total) => {
      reports.push([written, total]);
    });
    expect(reports).toEqual([[0, 0]]);
  });

  it("a report that throws abandons the write and leaves no file", async () => {
    const failing = files.write(ws, ALICE, { name: "x.bin" }, new Uint8Array(3 * MIB), NO_CALLER, () => {
      throw new Error("client went away");
    });
    await expect(failing).rejects.toThrow("client went away");
    expect((await files.page(ws, ALICE, { limit: 10 })).files).toEqual([]);
    expect(await readdir(join(root, ws, "files", ALICE)).catch(() => [])).toEqual([]);
  });
});
