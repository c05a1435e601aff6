import { mkdir, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeFolderIfMissing, makeFolderPathIfMissing } from "../../../src/storage/folders.ts";
import { withFsHook } from "../../helpers/fs-hook.ts";
import { type JournalEntry, journalDuring } from "../../helpers/fs-journal.ts";

// A write acknowledged as stored survives a power loss whatever happened before it (ADR 0149):
// a folder found already there may be one whose flush never happened (a crash between its mkdir
// and the flush, a flush that failed), which the kernel shows and a power loss takes away with
// everything written into it since.

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-folders-"));
  await makeFolderIfMissing(root);
});

afterEach(() => rm(root, { recursive: true, force: true }));

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
const at = (entries: JournalEntry[], op: string, path: string) =>
  entries.findIndex((entry) => entry.op === op && "path" in entry && entry.path === path);

describe("a folder made whose flush in its parent fails", () => {
  it("is removed before the error is thrown, so the next call makes it again and flushes it", async () => {
    const folder = join(root, "users");
    let failures = 1;
    const journal = await journalDuring(
      async () => {
        await expect(makeFolderIfMissing(folder)).rejects.toThrow("EIO");
        expect(await readdir(root)).toEqual([]);
        await makeFolderIfMissing(folder);
      },
      { sync: (path) => (path === root && failures-- > 0 ? eio() : undefined) },
    );
    expect(journal.unflushedFolders()).toEqual([]);
    expect((await stat(folder)).isDirectory()).toBe(true);
  });

  it("leaves the folder to a concurrent call that found it, which flushed it itself", async () => {
    const folder = join(root, "users");
    let reached: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release: (fault: Error | undefined) => void = () => undefined;
    let flushesOfRoot = 0;
    let foundFlushed = false;
    await journalDuring(
      async () => {
        const maker = makeFolderIfMissing(folder);
        await held;
        // The maker's flush is still running: the folder is there, its entry not yet flushed.
        await makeFolderIfMissing(folder);
        foundFlushed = flushesOfRoot === 2;
        release(undefined);
        await maker;
      },
      {
        sync: (path) => {
          if (path !== root) return undefined;
          flushesOfRoot += 1;
          if (flushesOfRoot > 1) return undefined;
          reached();
          return new Promise((resolve) => {
            release = resolve;
          });
        },
      },
    );
    expect(foundFlushed).toBe(true);
  });
});

describe("a folder found already there", () => {
  it("is flushed in its parent before the first call returns, and not again by later calls", async () => {
    const folder = join(root, "users");
    const first = await journalDuring(async () => {
      await mkdir(folder); // what a process that crashed before its flush leaves
      await makeFolderIfMissing(folder);
    });
    expect(first.unflushedFolders()).toEqual([]);
    const later = await journalDuring(async () => {
      await makeFolderIfMissing(folder);
      await makeFolderPathIfMissing(folder);
    });
    expect(later.synced).toEqual([]);
  });

  it("costs no look on its later uses, even when its parent was never flushed by this process", async () => {
    const partition = join(root, "ws_0123456789abcdef", "files");
    await mkdir(partition, { recursive: true }); // found after a restart: ws/ and files/ both
    await makeFolderIfMissing(partition);
    let looks = 0;
    await withFsHook(
      "lstat",
      (real) =>
        (...args) => {
          looks += 1;
          return real(...args);
        },
      async () => {
        for (let i = 0; i < 10; i += 1) await makeFolderIfMissing(partition);
      },
    );
    expect(looks).toBe(0);
  });

  it("has its own entry flushed before a folder is made inside it", async () => {
    const parent = join(root, "users");
    const child = join(parent, "usr_one");
    const journal = await journalDuring(async () => {
      await mkdir(parent);
      await makeFolderIfMissing(child);
    });
    expect(journal.unflushedFolders()).toEqual([]);
    expect(at(journal.entries, "sync", root)).toBeLessThan(at(journal.entries, "mkdir", child));
  });

  it("is flushed by makeFolderPathIfMissing when it makes the folders below it", async () => {
    const instance = join(root, "_instance");
    await makeFolderIfMissing(instance);
    const users = join(instance, "users");
    const journal = await journalDuring(async () => {
      await mkdir(users);
      await makeFolderPathIfMissing(join(users, "usr_one", "connections"));
    });
    expect(journal.unflushedFolders()).toEqual([]);
    expect(journal.entries.filter((entry) => entry.op === "mkdir")).toHaveLength(3);
  });
});
