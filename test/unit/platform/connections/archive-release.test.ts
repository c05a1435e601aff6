import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger, type Logger } from "../../../../src/log.ts";
import { connectionsApp } from "../../../../src/platform/connections/app.ts";
import { archiveReleasers } from "../../../../src/platform/kit.ts";
import { type PurgeReport, purgeExpiredArchives } from "../../../../src/storage/archive-retention.ts";
import { CredentialStore } from "../../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import { capturingLogger } from "../../../helpers/atrium.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";

// The connections app's archive releaser (ADR 0113, 0142) removes only the credentials an
// archived workspace's own connections were sealed for: it follows no link below the archive,
// reads a record only if it is that workspace's, and removes a credential only if it is sealed
// for that record. Each exception is reported with the removal, and its credential stays.

const DAY_MS = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 11, 1);
const LIVE = `ws_${"b".repeat(16)}`;
const GONE = `ws_${"a".repeat(16)}`;
const OLD = `${GONE}-${NOW - 40 * DAY_MS}`;
const LIVE_RECORD = `con_${"2".repeat(24)}`;
const GONE_RECORD = `con_${"3".repeat(24)}`;
const FIELD = "auth.value";
const KEYS = { keys: new Map([[1, randomBytes(32)]]), newest: 1 };

let root: string;
let layout: StorageLayout;
let credentials: CredentialStore;
let liveCredential: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-archive-release-"));
  layout = new StorageLayout(root);
  credentials = await CredentialStore.open(layout, KEYS);
  liveCredential = await credentials.put(LIVE_RECORD, FIELD, "sk-live-workspace");
  await writeRecord(join(root, LIVE), { id: LIVE_RECORD, workspaceId: LIVE, credential: liveCredential });
  await writeFile(join(root, LIVE, "workspace.json"), "{}");
  await mkdir(join(root, "_archive", OLD), { recursive: true });
  await writeFile(join(root, "_archive", OLD, "workspace.json"), "{}");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Writes connection `gh`'s record into a workspace folder (live or archived), naming `credential`. */
async function writeRecord(
  workspaceFolder: string,
  record: { id: string; workspaceId: string; credential: string },
  name = "gh",
): Promise<void> {
  const folder = join(workspaceFolder, "connections", "servers", name);
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, "connection.json"),
    JSON.stringify({
      id: record.id,
      name,
      workspaceId: record.workspaceId,
      url: "https://example.test/",
      auth: { kind: "static", header: "x-api-key", credential: record.credential },
    }),
  );
}

async function purge(log: Logger = createLogger("silent")): Promise<PurgeReport> {
  return purgeExpiredArchives({
    layout,
    retentionMs: 30 * DAY_MS,
    now: () => NOW,
    isLive: (workspaceId) => workspaceId === LIVE,
    releasers: archiveReleasers([connectionsApp], { layout, credentials }),
    cause: "past the test's retention",
    log,
  });
}

/** Runs `work`, replacing folder `swapped` with a link to `target` right after `checked` is lstat'ed. */
async function linkedAfterCheck<T>(
  checked: string,
  swapped: string,
  target: string,
  work: () => Promise<T>,
): Promise<T> {
  let done = false;
  try {
    return await withFsHook(
      "lstat",
      (real) =>
        async (path, ...rest) => {
          const info = await real(path, ...rest);
          if (!done && path === checked) {
            done = true;
            await rename(swapped, `${swapped}-old`);
            await symlink(target, swapped);
          }
          return info;
        },
      work,
    );
  } finally {
    expect(done, `${swapped} was swapped for a link`).toBe(true);
  }
}

const liveStillOpens = () => credentials.open(liveCredential, LIVE_RECORD, FIELD);

describe("the connections app's archive releaser", () => {
  it.each([
    "connections",
    "connections/servers",
    "connections/servers/gh",
    "connections/servers/gh/connection.json",
  ])(
    "reads nothing through a link at %s, so a live workspace's credential stays, and says so",
    async (at) => {
      // Beside a linked server folder or record, the archive's own connection is released as before.
      const beside = at.startsWith("connections/servers/");
      const own = await credentials.put(GONE_RECORD, FIELD, "sk-archived");
      if (beside) {
        const record = { id: GONE_RECORD, workspaceId: GONE, credential: own };
        await writeRecord(join(root, "_archive", OLD), record, "own");
      }
      const link = join(root, "_archive", OLD, at);
      await mkdir(dirname(link), { recursive: true });
      await symlink(join(root, LIVE, at), link);

      const report = await purge();

      expect(report.removed.map((entry) => entry.name)).toEqual([OLD]);
      expect(await liveStillOpens()).toBe("sk-live-workspace");
      expect(report.removed[0]?.leftAlone).toEqual([`${link}: a symbolic link, never followed`]);
      expect(
        await readFile(join(root, LIVE, "connections", "servers", "gh", "connection.json"), "utf8"),
      ).toContain(LIVE_RECORD);
      if (beside)
        await expect(credentials.open(own, GONE_RECORD, FIELD)).rejects.toThrow("No stored credential");
    },
  );

  it("reads nothing through a folder swapped for a link after it was checked, and keeps the archive for the next round (ADR 0145)", async () => {
    const archived = join(root, "_archive", OLD, "connections");
    const own = await credentials.put(GONE_RECORD, FIELD, "sk-archived");
    await writeRecord(join(root, "_archive", OLD), { id: GONE_RECORD, workspaceId: GONE, credential: own });
    // Once `servers/` was checked to be a real folder, `connections/` becomes a link to the live one's.
    const report = await linkedAfterCheck(
      join(archived, "servers"),
      archived,
      join(root, LIVE, "connections"),
      purge,
    );
    expect(await liveStillOpens()).toBe("sk-live-workspace");
    // What the archive names may not all be released: it is kept, not reported removed.
    expect(report.removed).toEqual([]);
    expect(report.failed.map(({ error }) => (error as Error).message)).toEqual([
      expect.stringContaining(
        `${join(archived, "servers", "gh", "connection.json")}: reached through a folder that is a symbolic link, never followed`,
      ),
    ]);
    expect(await readFile(join(root, "_archive", OLD, "workspace.json"), "utf8")).toBe("{}");
    // The next round sees the link as it is, notes it, and removes the archive (ADR 0142).
    const next = await purge();
    expect(next.removed[0]?.leftAlone).toEqual([`${archived}: a symbolic link, never followed`]);
    expect(await liveStillOpens()).toBe("sk-live-workspace");
  });

  it("keeps the credential of a record in the archive that names another workspace", async () => {
    const copied = join(root, "_archive", OLD);
    await writeRecord(copied, { id: LIVE_RECORD, workspaceId: LIVE, credential: liveCredential });
    const { log, lines } = capturingLogger();
    const report = await purge(log);
    expect(await liveStillOpens()).toBe("sk-live-workspace");
    const record = join(copied, "connections", "servers", "gh", "connection.json");
    expect(report.removed[0]?.leftAlone).toEqual([
      `${record}: not a connection of ${GONE}, so its credentials stay sealed`,
    ]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        workspace: GONE,
        msg: "archived workspace removed; what it named there was not released",
      }),
    );
  });

  it("keeps a credential the archived workspace's record names but that is sealed for another record", async () => {
    const edited = join(root, "_archive", OLD);
    await writeRecord(edited, { id: GONE_RECORD, workspaceId: GONE, credential: liveCredential });
    const report = await purge();
    expect(await liveStillOpens()).toBe("sk-live-workspace");
    expect(report.removed[0]?.leftAlone).toEqual([
      `${join(edited, "connections", "servers", "gh", "connection.json")}: names a credential sealed for another record, which stays`,
    ]);
  });
});
