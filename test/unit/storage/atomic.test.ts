import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import {
  CorruptJson,
  readJsonAtBoot,
  readJsonIfExists,
  TEMP_PREFIX,
  tempPathBeside,
  writeFileAtomic,
  writeJsonAtomic,
} from "../../../src/storage/atomic.ts";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-atomic-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  it("replaces the whole file: a shorter write leaves none of the longer one", async () => {
    const target = join(dir, "record.json");
    await writeFileAtomic(target, "x".repeat(4096));
    await writeFileAtomic(target, "short");
    expect(await readFile(target, "utf8")).toBe("short");
  });

  it("writes bytes as given", async () => {
    const target = join(dir, "blob");
    const bytes = new Uint8Array([0, 1, 2, 254, 255]);
    await writeFileAtomic(target, bytes);
    expect(new Uint8Array(await readFile(target))).toEqual(bytes);
  });

  it("leaves no temp file beside the target on success", async () => {
    const target = join(dir, "record.json");
    await writeFileAtomic(target, "one");
    await writeFileAtomic(target, "two");
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("rejects and creates nothing when the target's folder is missing", async () => {
    const target = join(dir, "missing", "record.json");
    await expect(writeFileAtomic(target, "data")).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readdir(dir)).toEqual([]);
  });

  it("removes its temp file when the final rename fails", async () => {
    // Renaming a file over a non-empty directory fails after the temp file was written.
    const target = join(dir, "occupied");
    await mkdir(target);
    await writeFile(join(target, "inside"), "keep");
    await expect(writeFileAtomic(target, "data")).rejects.toThrow();
    expect(await readdir(dir)).toEqual(["occupied"]);
    expect(await readFile(join(target, "inside"), "utf8")).toBe("keep");
  });

  it("leaves exactly one whole version after concurrent writers", async () => {
    const target = join(dir, "record.json");
    const versions = Array.from({ length: 20 }, (_, i) => `${i}:${"v".repeat(1000 + i)}`);
    await Promise.all(versions.map((v) => writeFileAtomic(target, v)));
    expect(versions).toContain(await readFile(target, "utf8"));
    expect(await readdir(dir)).toEqual(["record.json"]);
  });
});

describe("tempPathBeside", () => {
  it("names a dot-prefixed sibling, unique per call", () => {
    const a = tempPathBeside(join(dir, "record.json"));
    const b = tempPathBeside(join(dir, "record.json"));
    expect(a).not.toBe(b);
    expect(a.startsWith(join(dir, `${TEMP_PREFIX}record.json-`))).toBe(true);
    expect(TEMP_PREFIX.startsWith(".")).toBe(true);
  });
});

describe("writeJsonAtomic and readJsonIfExists", () => {
  it("round-trips a value", async () => {
    const target = join(dir, "value.json");
    await writeJsonAtomic(target, { a: 1, b: ["x"] });
    expect(await readJsonIfExists(target)).toEqual({ a: 1, b: ["x"] });
  });

  it("reads a missing file as undefined", async () => {
    expect(await readJsonIfExists(join(dir, "absent.json"))).toBeUndefined();
  });

  it("a file that is not JSON is CorruptJson, naming the file and where, never its text", async () => {
    const target = join(dir, "broken.json");
    await writeFile(target, '{\n  "secret": sk-live-AB\n}');
    const error = await readJsonIfExists(target).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error).toBeInstanceOf(CorruptJson);
    expect(error).toMatchObject({ path: target, where: "line 2, column 13" });
    expect((error as Error).message).toBe(`${target} is not valid JSON (line 2, column 13).`);
  });

  it("readJsonAtBoot turns a file that is not JSON into a BootError saying what to do", async () => {
    const target = join(dir, "broken.json");
    await writeFile(target, '{"a": 1');
    const error = await readJsonAtBoot(target).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BootError);
    expect((error as Error).message).toBe(
      `${target} is not valid JSON (it ends before its JSON does). Restore it from a backup, or move it out of the data root.`,
    );
    expect(await readJsonAtBoot(join(dir, "absent.json"))).toBeUndefined();
  });
});
