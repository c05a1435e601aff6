import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { purgeArchive } from "../../src/archive-purge.ts";
import { loadInstance } from "../../src/instance/load.ts";
import { acquireInstanceLock } from "../../src/instance/lock.ts";
import { createLogger } from "../../src/log.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { configSections } from "../../src/platform/kit.ts";
import { startTestAtrium } from "../helpers/atrium.ts";
import { capturedOutput, runAtriumCli, runAtriumMain, writeCliInstance } from "../helpers/cli.ts";
import { startConnectionsAtrium, workspaceWithConnectionAndTask } from "../helpers/connections-atrium.ts";
import { CREDENTIALS_SECTION } from "../helpers/credential-key.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { ANOTHER_HOLDER, takenOverAtFirstRelease } from "../helpers/lock-takeover.ts";
import { startRemoteServer } from "../helpers/remote-server.ts";

// `atrium archive purge --older-than DAYS [--dry-run]` (ADR 0142): removes the archived workspaces
// archived more than DAYS days ago, with what apps keep for them, and nothing else; never beside a
// running server; --dry-run lists and removes nothing.

const DAY_MS = 24 * 60 * 60 * 1000;
const SLOW = { timeout: 200_000 };
const SECRET = "sk-archive-purge-never-printed";

async function tempRoot(onFinished: TestContext["onTestFinished"]): Promise<{ dir: string; root: string }> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-archive-purge-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  const root = join(dir, "data");
  await mkdir(join(root, "_instance"), { recursive: true });
  await mkdir(join(root, "_archive"));
  return { dir, root };
}

const archiveName = (hex: string, daysAgo: number) => `ws_${hex.repeat(16)}-${Date.now() - daysAgo * DAY_MS}`;

async function archivedFolder(root: string, name: string): Promise<void> {
  await mkdir(join(root, "_archive", name, "files"), { recursive: true });
  await writeFile(join(root, "_archive", name, "workspace.json"), "{}");
}

describe("atrium archive purge", SLOW, () => {
  it("removes the archives older than --older-than, keeps the younger, follows no symlink, and --dry-run removes nothing", async ({
    onTestFinished,
  }) => {
    const { dir, root } = await tempRoot(onTestFinished);
    const instance = await writeCliInstance(dir);
    const old = archiveName("a", 40);
    const young = archiveName("b", 5);
    const linked = archiveName("c", 60);
    await archivedFolder(root, old);
    await archivedFolder(root, young);
    const outside = join(dir, "outside");
    await mkdir(outside);
    await writeFile(join(outside, "keep.txt"), "not in the archive");
    await symlink(outside, join(root, "_archive", linked));
    await symlink(outside, join(root, "_archive", old, "files", "elsewhere"));
    await symlink(outside, join(root, "_archive", old, "connections"));
    const cutShortLink = `.purging-${archiveName("d", 50)}`;
    await symlink(outside, join(root, "_archive", cutShortLink));
    await mkdir(join(root, "_archive", "operator-notes"));
    // A workspace restored by copying its archive back: that archive goes, releasing nothing.
    const restored = archiveName("e", 45);
    await archivedFolder(root, restored);
    await mkdir(join(root, `ws_${"e".repeat(16)}`));

    const dry = await runAtriumMain([
      "archive",
      "purge",
      "--older-than",
      "30",
      "--dry-run",
      "--instance",
      instance,
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove  ${join(root, "_archive", old)}`);
    expect(dry.stdout).not.toContain(young);
    expect(dry.stdout).toContain(`left alone    ${join(root, "_archive", linked)}: not a folder`);
    expect(dry.stdout).toContain(`left alone    ${join(root, "_archive", cutShortLink)}: not a folder`);
    expect(dry.stdout).not.toContain("would finish");
    expect(dry.stdout).toContain(
      "Dry run: 2 archived workspace(s) archived more than 30 day(s) ago would be removed",
    );
    expect((await readdir(join(root, "_archive"))).sort()).toEqual(
      [cutShortLink, linked, old, "operator-notes", restored, young].sort(),
    );

    const purged = await runAtriumMain(["archive", "purge", "--older-than", "30", "--instance", instance]);
    expect(purged.stderr).toBe("");
    expect(purged.code).toBe(0);
    expect(purged.stdout).toContain(
      `removed       ${join(root, "_archive", old)} (workspace ws_${"a".repeat(16)}`,
    );
    expect(purged.stdout).toContain(
      `left alone    ${join(root, "_archive", old, "connections")}: a symbolic link, never followed\n`,
    );
    const restoredLine = purged.stdout
      .split("\n")
      .find((line) => line.startsWith(`removed       ${join(root, "_archive", restored)} `));
    expect(restoredLine).toMatch(/; released nothing: shared with the live workspace$/);
    expect(purged.stdout).toContain(`left alone    ${join(root, "_archive", cutShortLink)}: not a folder`);
    expect(purged.stdout).toContain("Removed 2 archived workspace(s) archived more than 30 day(s) ago.");
    expect((await readdir(join(root, "_archive"))).sort()).toEqual(
      [cutShortLink, linked, "operator-notes", young].sort(),
    );
    expect(await readFile(join(outside, "keep.txt"), "utf8")).toBe("not in the archive");
    // Nothing outside _archive/ moved, and the lock was let go.
    expect(await readdir(root)).toEqual(expect.arrayContaining(["_archive", "_instance"]));
    expect(await readdir(join(root, "_instance"))).not.toContain("instance.lock");
  });

  it("releases an archive's credentials and schedule entries, and keeps a live workspace's", async ({
    onTestFinished,
  }) => {
    const remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
    onTestFinished(() => remote.stop());
    const time = new FakeTime(Date.now() - 40 * DAY_MS);
    const atrium = await startConnectionsAtrium("atrium-archive-purge-", time, createLogger("silent"));
    onTestFinished(() => rm(atrium.dir, { recursive: true, force: true }));
    const withConnection = (name: string) =>
      workspaceWithConnectionAndTask(atrium, remote.url.href, SECRET, name);
    const gone = await withConnection("gone");
    const kept = await withConnection("kept");
    expect((await atrium.rest("alice", "DELETE", `/v1/workspaces/${gone}`)).status).toBe(204);
    await atrium.close();
    const credentials = () => readdir(join(atrium.root, "_instance", "credentials"));
    const schedules = async (ws: string) =>
      (await readdir(join(atrium.root, "_instance", "tasks", "schedules"))).filter((name) =>
        name.startsWith(ws),
      );
    const before = (await credentials()).filter((name) => name.startsWith("cred_"));
    expect(before).toHaveLength(2);
    expect(await schedules(gone)).toHaveLength(1);

    const instance = await writeCliInstance(atrium.dir, { credentials: CREDENTIALS_SECTION });
    const purged = await runAtriumMain(["archive", "purge", "--older-than", "30", "--instance", instance]);
    expect(purged.code).toBe(0);
    expect(purged.stdout).toContain(`(workspace ${gone},`);
    expect(`${purged.stdout}${purged.stderr}`).not.toContain(SECRET);
    expect(await readdir(join(atrium.root, "_archive"))).toEqual([]);
    expect((await credentials()).filter((name) => name.startsWith("cred_"))).toHaveLength(1);
    expect(await schedules(gone)).toEqual([]);
    expect(await schedules(kept)).toHaveLength(1);
  });

  it("stops before the next archive once another process has taken the root over, says what it did not reach, and exits 1", async ({
    onTestFinished,
  }) => {
    const { dir, root } = await tempRoot(onTestFinished);
    const names = [archiveName("a", 50), archiveName("b", 45), archiveName("c", 40)];
    for (const name of names) await archivedFolder(root, name);
    const lockPath = join(root, "_instance", "instance.lock");
    // Another process takes the root over while the first archive's removal runs (as if this one
    // had been frozen past the stale bound there): an app's releaser is where it is caught.
    const { app: frozenOnce, released } = takenOverAtFirstRelease(() => lockPath);
    const config = await loadInstance(await writeCliInstance(dir), {
      sections: configSections(PLATFORM_APPS),
    });
    const output = capturedOutput();
    const code = await purgeArchive(
      {
        config,
        olderThanDays: 30,
        dryRun: false,
        apps: [...PLATFORM_APPS, frozenOnce],
        clock: Date.now,
        lockRoot: (layout) =>
          acquireInstanceLock(layout, {
            publicUrl: config.http.publicUrl,
            log: createLogger("silent"),
            existingRoot: true,
          }),
      },
      output,
    );
    // Before, it went on removing archives (and releasing what they name) beside the process that
    // held the root now, and exited 0.
    expect(code).toBe(1);
    expect(released).toEqual([names[0]]);
    // The archive whose removal had begun is finished; none after it is touched.
    expect((await readdir(join(root, "_archive"))).sort()).toEqual([names[1], names[2]]);
    expect(output.stdout).toContain(`removed       ${join(root, "_archive", names[0] as string)} (`);
    for (const name of [names[1], names[2]] as string[]) {
      expect(output.stderr).toContain(`not reached   ${join(root, "_archive", name)} (`);
    }
    expect(output.stderr).toContain(
      `atrium: the instance lock ${lockPath} stopped being this process's while it ran`,
    );
    expect(output.stderr).toContain(
      "Removed 1 archived workspace(s) archived more than 30 day(s) ago; those not reached (above) are left as they are.",
    );
    expect(output.stdout).not.toContain("Removed ");
    // The new holder's lock is left alone.
    expect(JSON.parse(await readFile(lockPath, "utf8"))).toEqual(ANOTHER_HOLDER);
  });

  it("refuses while a server holds the root, saying what to do, and --dry-run still lists beside it", async ({
    onTestFinished,
  }) => {
    const { dir, root } = await tempRoot(onTestFinished);
    const old = archiveName("a", 40);
    await archivedFolder(root, old);
    const atrium = await startTestAtrium({ dir });
    onTestFinished(() => atrium.close());
    const instance = await writeCliInstance(dir);

    const refused = await runAtriumMain(["archive", "purge", "--older-than", "30", "--instance", instance]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`The data root ${root} is in use by Atrium process`);
    expect(refused.stderr).toContain("stop it first, or set storage.archiveRetentionDays");
    expect(await readdir(join(root, "_archive"))).toEqual([old]);

    const dry = await runAtriumMain([
      "archive",
      "purge",
      "--older-than",
      "30",
      "--dry-run",
      "--instance",
      instance,
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove  ${join(root, "_archive", old)}`);
    expect(await readdir(join(root, "_archive"))).toEqual([old]);
  });

  it("refuses bad arguments with exit 2 and what to do, and a root that is not one with exit 1", async ({
    onTestFinished,
  }) => {
    const { dir, root } = await tempRoot(onTestFinished);
    const old = archiveName("a", 40);
    await archivedFolder(root, old);
    const instance = await writeCliInstance(dir);
    const cases: Array<[string[], string]> = [
      [["archive"], "atrium archive needs a subcommand"],
      [["archive", "prune"], 'Unknown subcommand "archive prune"'],
      [["archive", "purge", "--instance", instance], "atrium archive purge needs --older-than DAYS"],
      [["archive", "purge", "--older-than", "-1"], "--older-than"],
      [
        ["archive", "purge", "--older-than", "1e3"],
        '--older-than must be a whole number of days from 0 to 36500, not "1e3"',
      ],
      [["archive", "purge", "--older-than", "36501"], 'not "36501"'],
      [["archive", "purge", "--older-than", ""], 'not ""'],
      [["archive", "purge", "--older-than", "30", "--force"], "Unknown option '--force'"],
      [["archive", "purge", "--older-than", "30", "everything"], "Unexpected argument 'everything'"],
      [["archive", "purge", "--older-than", "30", "--dry-run=yes"], "--dry-run"],
    ];
    for (const [args, message] of cases) {
      const exit = await runAtriumMain(args);
      expect(exit.code, args.join(" ")).toBe(2);
      expect(exit.stderr, args.join(" ")).toContain(message);
    }
    const typo = join(dir, "no-such-root");
    for (const dryRun of [[], ["--dry-run"]]) {
      const exit = await runAtriumMain([
        "archive",
        "purge",
        "--older-than",
        "0",
        ...dryRun,
        "--instance",
        instance,
        "--data",
        typo,
      ]);
      expect(exit.code).toBe(1);
      expect(exit.stderr).toContain(`${typo} is not a data root Atrium has run on`);
    }
    expect(await readdir(join(root, "_archive"))).toEqual([old]);
    // The process boundary once: bin/atrium.js exits with main's code.
    const spawned = await runAtriumCli(["archive", "purge", "--older-than", "x"], dir, 60_000);
    expect(spawned.code).toBe(2);
  });
});
