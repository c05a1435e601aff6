import { link, mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  isReachedThroughLink,
  NoFollowReader,
  openFileBelow,
  pinFolder,
} from "../../../src/storage/no-follow.ts";
import { makeFifo } from "../../helpers/fifo.ts";
import { withFsHook } from "../../helpers/fs-hook.ts";

// What reads below a folder an operator or member can change follows no link, and checks the
// file it opened is the one asked for: a folder on the way swapped for a link after its caller
// checked it is not read through, nor the reader's own folder, nor a file with a second name
// (ADR 0145).

let top: string;
let outside: string;

beforeEach(async () => {
  top = await mkdtemp(join(tmpdir(), "atrium-no-follow-"));
  outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
  await mkdir(join(top, "a", "servers", "gh"), { recursive: true });
  await writeFile(join(top, "a", "servers", "gh", "record.json"), "OWN");
  await mkdir(join(outside, "servers", "gh"), { recursive: true });
  await writeFile(join(outside, "servers", "gh", "record.json"), "ANOTHER-WORKSPACE'S");
});

afterEach(async () => {
  await rm(top, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

/** Replaces folder `a` below `top` with a link to `outside`, as an operator's `ln -sfn` would. */
async function swapForLink(): Promise<void> {
  await rename(join(top, "a"), join(top, "a-old"));
  await symlink(outside, join(top, "a"));
}

/** Runs `work` as on a system without /proc: the handle's name cannot be read. */
async function withoutProc<T>(work: () => Promise<T>): Promise<T> {
  return withFsHook(
    "readlink",
    (real) =>
      async (link, ...rest) => {
        if (String(link).startsWith("/proc/")) throw Object.assign(new Error("no /proc"), { code: "ENOENT" });
        return real(link, ...rest);
      },
    work,
  );
}

const PROC_OR_NOT = [
  ["with /proc", (work: () => Promise<unknown>) => work()],
  ["without /proc", withoutProc],
] as const;

describe("NoFollowReader", () => {
  it.each(PROC_OR_NOT)(
    "refuses a file reached through a folder swapped for a link after isFolder accepted it (%s)",
    async (_, as) => {
      const reader = new NoFollowReader(top);
      const servers = join(top, "a", "servers");
      expect(await reader.isFolder(servers)).toBe(true);
      const [folder] = await reader.foldersIn(servers);
      await swapForLink();
      const record = join(folder ?? "", "record.json");
      expect(await as(() => reader.readText(record))).toBeUndefined();
      expect(reader.leftAlone).toEqual([
        `${record}: reached through a folder that is a symbolic link, never followed`,
      ]);
    },
  );

  it.each([
    ["a looping link (ELOOP)", "gh"],
    ["a link to a file (ENOTDIR)", join("..", "..", "a-file")],
  ])(
    "notes a file reached through a folder swapped for %s after foldersIn listed it, rather than throwing",
    async (_, target) => {
      // It threw out of the release, which failed the whole archive ("not removed", every pass).
      await writeFile(join(top, "a-file"), "NOT-A-FOLDER");
      const reader = new NoFollowReader(top);
      const servers = join(top, "a", "servers");
      const [folder] = await reader.foldersIn(servers);
      await rm(join(servers, "gh"), { recursive: true });
      await symlink(target, join(servers, "gh"));
      const record = join(folder ?? "", "record.json");
      await expect(reader.readText(record)).resolves.toBeUndefined();
      expect(reader.leftAlone).toEqual([
        `${record}: reached through a folder that is a symbolic link, never followed`,
      ]);
    },
  );

  it.each(PROC_OR_NOT)(
    "reads nothing once its own folder, seen to be a real folder, is swapped for a link (%s)",
    async (_, as) => {
      // As `_archive/` itself is to an archive release: its caller checked it is a real folder.
      const reader = new NoFollowReader(join(top, "a"));
      const servers = join(top, "a", "servers");
      expect(await reader.isFolder(servers)).toBe(true);
      const [folder] = await reader.foldersIn(servers);
      await swapForLink();
      const record = join(folder ?? "", "record.json");
      expect(await as(() => reader.readText(record))).toBeUndefined();
      expect(reader.leftAlone).toEqual([
        `${record}: reached through a folder that is a symbolic link, never followed`,
      ]);
    },
  );

  it.each([
    ["a looping link", (servers: string) => symlink("servers", servers), "a symbolic link, never followed"],
    ["a file", (servers: string) => writeFile(servers, "A FILE"), "not a folder"],
  ])(
    "notes a folder isFolder accepted that is %s before foldersIn lists it, rather than finding nothing",
    async (_, put, noted) => {
      // Answered as missing, the release found no record, noted nothing, and the archive was
      // reported removed with every credential it names still sealed.
      const reader = new NoFollowReader(top);
      const servers = join(top, "a", "servers");
      expect(await reader.isFolder(servers)).toBe(true);
      await rename(servers, join(top, "a", "servers-old"));
      await put(servers);
      expect(await reader.foldersIn(servers)).toEqual([]);
      expect(reader.leftAlone).toEqual([`${servers}: ${noted}`]);
    },
  );

  it("reads below the folder its caller pinned, and nothing once that folder is swapped for a link", async () => {
    const pinned = await pinFolder(join(top, "a"));
    const reader = new NoFollowReader(pinned);
    const record = join(top, "a", "servers", "gh", "record.json");
    expect(await reader.readText(record)).toBe("OWN");
    await swapForLink();
    expect(await reader.readText(record)).toBeUndefined();
    expect(reader.leftAlone).toHaveLength(1);
    expect(reader.leftAlone.every(isReachedThroughLink)).toBe(true);
  });

  it("notes a folder it is given that is a link, and reads nothing below it", async () => {
    const linkedTop = join(outside, "top");
    await symlink(top, linkedTop);
    const reader = new NoFollowReader(linkedTop);
    expect(await reader.isFolder(join(linkedTop, "a", "servers"))).toBe(false);
    expect(await reader.readText(join(linkedTop, "a", "servers", "gh", "record.json"))).toBeUndefined();
    expect(reader.leftAlone).toEqual([`${linkedTop}: a symbolic link, never followed`]);
  });

  it("notes a file with a second name outside its folder, and reads it not", async () => {
    const record = join(top, "a", "servers", "gh", "other.json");
    await link(join(outside, "servers", "gh", "record.json"), record);
    const reader = new NoFollowReader(top);
    expect(await reader.readText(record)).toBeUndefined();
    expect(reader.leftAlone).toEqual([
      `${record}: a hard link (a second name of a file that may be outside this folder), never read`,
    ]);
  });

  it("reads a regular file below real folders, and notes a FIFO or a folder in a file's place without waiting on it", async () => {
    const reader = new NoFollowReader(top);
    const gh = join(top, "a", "servers", "gh");
    expect(await reader.readText(join(gh, "record.json"))).toBe("OWN");
    makeFifo(join(gh, "piped.json"));
    await mkdir(join(gh, "folder.json"));
    expect(await reader.readText(join(gh, "piped.json"))).toBeUndefined();
    expect(await reader.readText(join(gh, "folder.json"))).toBeUndefined();
    expect(reader.leftAlone).toEqual([
      `${join(gh, "piped.json")}: not a regular file`,
      `${join(gh, "folder.json")}: not a regular file`,
    ]);
  });
});

describe("openFileBelow", () => {
  it("opens below a folder that is itself a link (the data root, an operator's configured folder)", async () => {
    const linkedTop = join(outside, "top");
    await symlink(top, linkedTop);
    const record = join(linkedTop, "a", "servers", "gh", "record.json");
    for (const within of [await pinFolder(linkedTop, { link: true }), linkedTop]) {
      const opened = await openFileBelow(record, within, { link: true });
      if (opened === undefined || "why" in opened) throw new Error(`not opened: ${JSON.stringify(opened)}`);
      try {
        expect(await opened.handle.readFile("utf8")).toBe("OWN");
      } finally {
        await opened.handle.close();
      }
    }
  });

  it("reads nothing below a folder given as a path that is a link: only one its caller allows may be", async () => {
    // A workspace's or a person's skills/ swapped for a link: pinned with its links resolved, its
    // files were read wherever the link pointed.
    const linkedTop = join(outside, "top");
    await symlink(top, linkedTop);
    expect(await openFileBelow(join(linkedTop, "a", "servers", "gh", "record.json"), linkedTop)).toEqual({
      why: "through_symlink",
    });
  });

  it("refuses a hard link to a file outside the folder: the kernel names it as it was opened", async () => {
    const path = join(top, "a", "servers", "gh", "notes.md");
    await link(join(outside, "servers", "gh", "record.json"), path);
    expect(await openFileBelow(path, top)).toEqual({ why: "hard_link" });
  });

  it("opens a hard link below a folder pinned as one whose files may have a second name", async () => {
    // Atrium's own platform skills, which a package store may install hard-linked (ostree, Nix, pnpm).
    const path = join(top, "a", "servers", "gh", "notes.md");
    await link(join(outside, "servers", "gh", "record.json"), path);
    for (const within of [await pinFolder(top, { hardLinks: true }), top]) {
      const opened = await openFileBelow(path, within, { hardLinks: true });
      if (opened === undefined || "why" in opened) throw new Error(`not opened: ${JSON.stringify(opened)}`);
      await opened.handle.close();
    }
  });

  it("answers nothing there, not a link, when the folder it reads within is a plain file", async () => {
    // whyNotReached walked only the folders below `within`, so `within` a file was answered as
    // reached through a link: a message saying there was a link where there was none.
    const scope = join(outside, "skills");
    await writeFile(scope, "A FILE, NOT A LINK");
    expect(await openFileBelow(join(scope, "style", "SKILL.md"), scope)).toBeUndefined();
  });

  it("answers a folder on the way that is a looping link as reached through a link, and one that is a file as nothing there", async () => {
    await rename(join(top, "a", "servers"), join(top, "a", "servers-old"));
    await symlink("servers", join(top, "a", "servers"));
    expect(await openFileBelow(join(top, "a", "servers", "gh", "record.json"), top)).toEqual({
      why: "through_symlink",
    });
    await rm(join(top, "a", "servers"));
    await writeFile(join(top, "a", "servers"), "A FILE");
    expect(await openFileBelow(join(top, "a", "servers", "gh", "record.json"), top)).toBeUndefined();
  });

  it("refuses a path that is not below the folder it is read within", async () => {
    await expect(openFileBelow(join(outside, "servers", "gh", "record.json"), top)).rejects.toThrow(
      RangeError,
    );
  });
});
