import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileExclusive, createFolderExclusive } from "../../../src/storage/exclusive.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// A folder made once (the first OAuth signing keys) must survive a power loss whole: found in
// place, it holds every file it was made with (adr/0024).

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-exclusive-"));
});

afterEach(() => rm(root, { recursive: true, force: true }));

describe("createFolderExclusive", () => {
  it("flushes the staged folder before renaming it into place, then the rename, and each parent it makes", async () => {
    const keys = join(root, "_instance", "oauth", "keys");
    let made = false;
    const journal = await journalDuring(async () => {
      made = await createFolderExclusive(keys, { "1.json": "{}", "2.json": "[]" });
    });
    expect(made).toBe(true);
    const staging = journal.entries.find((entry) => entry.op === "rename")?.from ?? "";
    expect(dirname(staging)).toBe(dirname(keys));
    const steps = journal.entries.map((entry) =>
      entry.op === "rename" ? "rename" : `${entry.op} ${entry.path}`,
    );
    // The files' names flushed in the staged folder, then the rename in the parent, in that order.
    expect(steps.slice(-3)).toEqual([`sync ${staging}`, "rename", `sync ${dirname(keys)}`]);
    expect(journal.unflushedFolders()).toEqual([]);
    expect((await readdir(keys)).sort()).toEqual(["1.json", "2.json"]);
    expect(await readFile(join(keys, "2.json"), "utf8")).toBe("[]");
    expect((await stat(keys)).mode & 0o777).toBe(0o700);
  });

  it("of two creators one makes the folder; the other finds it and leaves no staging folder", async () => {
    const keys = join(root, "keys");
    const made = await Promise.all([
      createFolderExclusive(keys, { "1.json": "first" }),
      createFolderExclusive(keys, { "1.json": "second" }),
    ]);
    expect(made.sort()).toEqual([false, true]);
    expect(await readdir(root)).toEqual(["keys"]);
  });
});

describe("createFileExclusive", () => {
  it("unlinks a file whose folder flush fails and answers the error, so an error means not created", async () => {
    const path = join(root, "secret");
    const eio = Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    let failed = false;
    let answer: unknown;
    const journal = await journalDuring(
      async () => {
        answer = await createFileExclusive(path, "one").catch((error: Error) => error);
      },
      {
        sync: (synced) => {
          if (synced !== root || failed) return undefined;
          failed = true;
          return eio;
        },
      },
    );
    expect(answer).toBe(eio);
    expect(await readdir(root)).toEqual([]);
    // The unlink is flushed in its folder too.
    expect(journal.synced.at(-1)).toBe(root);
    expect(await createFileExclusive(path, "two")).toBe(true);
    expect(await readFile(path, "utf8")).toBe("two");
  });
});
