import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import { createLogger } from "../../../src/log.ts";
import {
  type ArchiveReleaser,
  type ArchiveRetention,
  listExpiredArchives,
  purgeExpiredArchives,
} from "../../../src/storage/archive-retention.ts";
import { parseArchivedName, StorageLayout } from "../../../src/storage/paths.ts";
import { capturingLogger } from "../../helpers/atrium.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 11, 1);
const OLD = `ws_${"a".repeat(16)}-${NOW - 31 * DAY_MS}`;
const YOUNG = `ws_${"b".repeat(16)}-${NOW - 29 * DAY_MS}`;

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-archive-retention-"));
  layout = new StorageLayout(root);
  for (const name of [OLD, YOUNG]) {
    await mkdir(join(root, "_archive", name, "files"), { recursive: true });
    await writeFile(join(root, "_archive", name, "workspace.json"), "{}");
  }
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function retention(changes: Partial<ArchiveRetention> = {}): ArchiveRetention {
  return {
    layout,
    retentionMs: 30 * DAY_MS,
    now: () => NOW,
    isLive: () => false,
    releasers: [],
    cause: "past the test's retention",
    log: createLogger("silent"),
    ...changes,
  };
}

/** A releaser that notes each archive it is asked to release and leaves nothing alone. */
const recordingTo =
  (released: string[]): ArchiveReleaser =>
  async (_workspaceId, name) => {
    released.push(name);
    return [];
  };

const archive = async () => (await readdir(join(root, "_archive"))).sort();

describe("purgeExpiredArchives", () => {
  it("removes the archives past the retention, after every app released what it keeps for them", async () => {
    const released: string[] = [];
    const purged = await purgeExpiredArchives(
      retention({
        releasers: [
          async (workspaceId, name) => {
            // Released while the archived folder is still there to read.
            expect(await readdir(join(root, "_archive", name))).toContain("workspace.json");
            released.push(`${workspaceId} ${name}`);
            return [];
          },
        ],
      }),
    );
    expect(purged.removed.map((entry) => entry.name)).toEqual([OLD]);
    expect(released).toEqual([`${parseArchivedName(OLD)?.workspaceId} ${OLD}`]);
    expect(await archive()).toEqual([YOUNG]);
  });

  it("keeps an archive whose release failed whole, to try it next round, and removes the others", async () => {
    const older = `ws_${"c".repeat(16)}-${NOW - 40 * DAY_MS}`;
    await mkdir(join(root, "_archive", older));
    const { log, lines } = capturingLogger();
    const failing = retention({
      log,
      releasers: [
        async (workspaceId) => {
          if (workspaceId === parseArchivedName(OLD)?.workspaceId) throw new Error("disk says no");
          return [];
        },
      ],
    });
    expect((await purgeExpiredArchives(failing)).removed).toHaveLength(1);
    expect(await archive()).toEqual([OLD, YOUNG].sort());
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "archived workspace not removed; tried again next round" }),
    );
  });

  it("removes the folder of a workspace restored by copy but releases nothing of the live one", async () => {
    const released: string[] = [];
    const report = await purgeExpiredArchives(
      retention({ isLive: () => true, releasers: [recordingTo(released)] }),
    );
    expect(released).toEqual([]);
    expect(report.removed).toEqual([
      expect.objectContaining({ name: OLD, sharedWith: "the live workspace" }),
    ]);
    expect(await archive()).toEqual([YOUNG]);
  });

  it("releases a workspace archived twice (restored by copy between) only with its last archive", async () => {
    // Archived 35 days ago, restored by copy, archived again 31 days ago (OLD).
    const first = `${parseArchivedName(OLD)?.workspaceId}-${NOW - 35 * DAY_MS}`;
    await mkdir(join(root, "_archive", first));
    const released: string[] = [];
    const purge = () => purgeExpiredArchives(retention({ releasers: [recordingTo(released)] }));
    // Both past the retention: the older is removed first, and the newer, which names the most
    // (it was restored from the older, then added to), releases.
    expect((await purge()).removed).toEqual([
      expect.objectContaining({ name: first, sharedWith: "another archive" }),
      expect.not.objectContaining({ sharedWith: expect.anything() }),
    ]);
    expect(released).toEqual([OLD]);
    expect(await archive()).toEqual([YOUNG]);
  });

  it("holds a workspace's newer archive while its older one fails, so the newer still releases later", async () => {
    const first = `${parseArchivedName(OLD)?.workspaceId}-${NOW - 35 * DAY_MS}`;
    await mkdir(join(root, "_archive", first));
    // The older archive cannot be moved aside this pass (its removal folder's parent is missing).
    class Failing extends StorageLayout {
      override purgingFolder(name: string): string {
        return name === first ? join(root, "missing", name) : super.purgingFolder(name);
      }
    }
    const released: string[] = [];
    const releasers = [recordingTo(released)];
    expect(
      (await purgeExpiredArchives(retention({ layout: new Failing(root), releasers }))).removed,
    ).toHaveLength(0);
    expect(await archive()).toEqual([first, OLD, YOUNG].sort());
    // Next pass, with the disk mended: the older goes as shared, the newer releases.
    expect((await purgeExpiredArchives(retention({ releasers }))).removed).toHaveLength(2);
    expect(released).toEqual([OLD]);
  });

  it("keeps what an archive names while a younger archive of the same workspace is kept", async () => {
    const younger = `${parseArchivedName(OLD)?.workspaceId}-${NOW - DAY_MS}`;
    await mkdir(join(root, "_archive", younger));
    const released: string[] = [];
    await purgeExpiredArchives(retention({ releasers: [recordingTo(released)] }));
    expect(released).toEqual([]);
    expect(await archive()).toEqual([younger, YOUNG].sort());
  });

  it("finishes a removal cut short and leaves names it did not make alone", async () => {
    await mkdir(join(root, "_archive", `.purging-${OLD}`, "files"), { recursive: true });
    await mkdir(join(root, "_archive", ".purging-not-an-archive"));
    await mkdir(join(root, "_archive", "operator-notes"));
    await purgeExpiredArchives(retention({ now: () => NOW - 5 * DAY_MS }));
    expect(await archive()).toEqual([".purging-not-an-archive", OLD, "operator-notes", YOUNG].sort());
  });

  it("reports a removal cut short it cannot finish, and still removes the expired archives, pass after pass", async () => {
    const stuck = `ws_${"c".repeat(16)}-${NOW - 50 * DAY_MS}`;
    await mkdir(join(root, "_archive", `.purging-${stuck}`, "files"), { recursive: true });
    // Its removal fails as one of a folder Atrium may not delete would (EACCES, EPERM, EBUSY): the
    // path given for it runs through a file.
    await writeFile(join(root, "a-file"), "");
    class Stuck extends StorageLayout {
      override purgingFolder(name: string): string {
        return name === stuck ? join(root, "a-file", name) : super.purgingFolder(name);
      }
    }
    const later = `ws_${"d".repeat(16)}-${NOW - 35 * DAY_MS}`;
    const { log, lines } = capturingLogger();
    const stuckRetention = retention({ layout: new Stuck(root), log });
    const first = await purgeExpiredArchives(stuckRetention);
    expect(first.removed.map((entry) => entry.name)).toEqual([OLD]);
    expect(first.unfinished).toEqual([{ name: stuck, error: expect.objectContaining({ code: "ENOTDIR" }) }]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        folder: stuck,
        msg: "archived workspace's removal not finished; tried again next round",
      }),
    );
    await mkdir(join(root, "_archive", later));
    const second = await purgeExpiredArchives(stuckRetention);
    expect(second.removed.map((entry) => entry.name)).toEqual([later]);
    expect(second.unfinished.map((entry) => entry.name)).toEqual([stuck]);
    expect(await archive()).toEqual([`.purging-${stuck}`, YOUNG].sort());
  });

  it("leaves a .purging- entry that is a link or a file alone: never followed, never removed", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-archive-outside-"));
    try {
      await writeFile(join(outside, "keep.txt"), "not Atrium's");
      const linked = `.purging-ws_${"c".repeat(16)}-${NOW - 50 * DAY_MS}`;
      const file = `.purging-ws_${"d".repeat(16)}-${NOW - 50 * DAY_MS}`;
      await symlink(outside, join(root, "_archive", linked));
      await writeFile(join(root, "_archive", file), "");
      const listing = await listExpiredArchives(layout, NOW);
      expect(listing.cutShort).toEqual([]);
      expect(listing.notFolders).toEqual([linked, file]);
      const report = await purgeExpiredArchives(retention());
      expect(report.unfinished).toEqual([]);
      expect(await archive()).toEqual([linked, file, YOUNG].sort());
      expect(await readdir(outside)).toEqual(["keep.txt"]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("counts age by the archive's own instant: a clock stepped back removes nothing", async () => {
    expect((await purgeExpiredArchives(retention({ now: () => NOW - 365 * DAY_MS }))).removed).toHaveLength(
      0,
    );
    expect(await archive()).toEqual([OLD, YOUNG].sort());
  });

  it("does nothing when nothing was ever archived", async () => {
    const empty = new StorageLayout(await mkdtemp(join(tmpdir(), "atrium-archive-empty-")));
    try {
      expect((await purgeExpiredArchives(retention({ layout: empty }))).removed).toHaveLength(0);
    } finally {
      await rm(empty.root, { recursive: true, force: true });
    }
  });

  it("never follows a symlink: one named like an archive is left, and one inside an archive is removed as a link", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-archive-outside-"));
    try {
      await writeFile(join(outside, "keep.txt"), "not Atrium's");
      const linked = `ws_${"d".repeat(16)}-${NOW - 60 * DAY_MS}`;
      await symlink(outside, join(root, "_archive", linked));
      await symlink(outside, join(root, "_archive", OLD, "files", "elsewhere"));
      await symlink(join(outside, "keep.txt"), join(root, "_archive", OLD, "workspace-link.json"));
      const released: string[] = [];
      const report = await purgeExpiredArchives(retention({ releasers: [recordingTo(released)] }));
      expect(report.removed.map((entry) => entry.name)).toEqual([OLD]);
      expect(report.notFolders).toEqual([linked]);
      expect(released).toEqual([OLD]);
      expect(await archive()).toEqual([linked, YOUNG].sort());
      expect(await readFile(join(outside, "keep.txt"), "utf8")).toBe("not Atrium's");
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("refuses an _archive that is a symlink, touching nothing it points to", async () => {
    const outside = await mkdtemp(join(tmpdir(), "atrium-archive-outside-"));
    try {
      await rm(join(root, "_archive"), { recursive: true });
      await mkdir(join(outside, OLD));
      await symlink(outside, join(root, "_archive"));
      const refusal = await purgeExpiredArchives(retention()).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(BootError);
      expect((refusal as Error).message).toContain("is not a folder (a symbolic link or a file)");
      expect(await readdir(outside)).toEqual([OLD]);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  describe("_archive/ or an archive swapped for a link after the purge checked it (ADR 0145)", () => {
    let outside: string;
    beforeEach(async () => {
      outside = await mkdtemp(join(tmpdir(), "atrium-archive-outside-"));
      await mkdir(join(outside, OLD));
      await writeFile(join(outside, OLD, "precious.txt"), "not Atrium's");
    });
    afterEach(async () => {
      await rm(outside, { recursive: true, force: true });
    });

    /** `_archive/` moved aside and a link to `outside` put in its place, as `ln -sfn` would. */
    const swapArchive = async () => {
      await rename(join(root, "_archive"), join(root, "_archive-real"));
      await symlink(outside, join(root, "_archive"));
    };

    it("renames and removes nothing through _archive/ swapped for a link while a release ran", async () => {
      // The rename and rm -r that follow a release act by path: through the link, they removed
      // the folder of the same name outside the data root, and reported the archive removed.
      const report = await purgeExpiredArchives(
        retention({
          releasers: [
            async () => {
              await swapArchive();
              return [];
            },
          ],
        }),
      );
      expect(await readdir(outside)).toEqual([OLD]);
      expect(await readdir(join(outside, OLD))).toEqual(["precious.txt"]);
      expect(report.removed).toEqual([]);
      expect(report.failed).toEqual([
        {
          entry: expect.objectContaining({ name: OLD }),
          error: expect.objectContaining({
            message: expect.stringContaining(`${join(root, "_archive")} is now a symbolic link`),
          }),
        },
      ]);
      expect((await readdir(join(root, "_archive-real"))).sort()).toEqual([OLD, YOUNG].sort());
    });

    it("removes nothing when the archive's own folder is swapped for a link while a release ran", async () => {
      const report = await purgeExpiredArchives(
        retention({
          releasers: [
            async (_workspaceId, name) => {
              await rename(join(root, "_archive", name), join(root, "aside"));
              await symlink(join(outside, OLD), join(root, "_archive", name));
              return [];
            },
          ],
        }),
      );
      expect(report.failed.map(({ error }) => (error as Error).message)).toEqual([
        expect.stringContaining(`${join(root, "_archive", OLD)} is now a symbolic link`),
      ]);
      expect(await readdir(join(outside, OLD))).toEqual(["precious.txt"]);
    });

    it("gives each release _archive/ as it pinned it, and keeps an archive a release read a file of through a link", async () => {
      const { log, lines } = capturingLogger();
      const note = `${join(root, "_archive", OLD, "connections", "servers", "gh", "record.json")}: reached through a folder that is a symbolic link, never followed`;
      const given: unknown[] = [];
      const report = await purgeExpiredArchives(
        retention({
          log,
          releasers: [
            async (_workspaceId, _name, pinned) => {
              given.push(pinned);
              return [note];
            },
          ],
        }),
      );
      expect(given).toEqual([
        { path: join(root, "_archive"), real: join(await realpath(root), "_archive"), hardLinks: false },
      ]);
      expect(report.removed).toEqual([]);
      expect(report.failed.map(({ error }) => (error as Error).message)).toEqual([
        expect.stringContaining(`swapped (for a symbolic link or a file) while it was released (${note})`),
      ]);
      expect(await archive()).toEqual([OLD, YOUNG].sort());
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: "archived workspace not removed; tried again next round" }),
      );
    });

    it("does not finish a removal cut short through _archive/ swapped for a link since it was listed", async () => {
      await mkdir(join(root, "_archive", `.purging-${OLD}`));
      await mkdir(join(outside, `.purging-${OLD}`));
      let asked = 0;
      const report = await purgeExpiredArchives(
        retention({
          // Asked right before the cut-short folder is removed: the swap lands after the listing.
          mayWrite: async () => {
            if (asked++ === 0) await swapArchive();
            return true;
          },
        }),
      );
      expect(report.unfinished).toEqual([
        {
          name: OLD,
          error: expect.objectContaining({ message: expect.stringContaining("is now a symbolic link") }),
        },
      ]);
      expect((await readdir(outside)).sort()).toEqual([`.purging-${OLD}`, OLD].sort());
      expect(await readdir(join(outside, OLD))).toEqual(["precious.txt"]);
    });
  });

  it("lists what is past a cutoff, oldest first, and removes nothing", async () => {
    const older = `ws_${"c".repeat(16)}-${NOW - 40 * DAY_MS}`;
    await mkdir(join(root, "_archive", older));
    await mkdir(join(root, "_archive", `.purging-${YOUNG}`));
    const listing = await listExpiredArchives(layout, NOW - 30 * DAY_MS);
    expect(listing.expired.map((entry) => entry.name)).toEqual([older, OLD]);
    expect(listing.cutShort).toEqual([YOUNG]);
    expect(await archive()).toEqual([`.purging-${YOUNG}`, older, OLD, YOUNG].sort());
  });
});
