import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createLogger } from "../../../src/log.ts";
import { connectionsApp } from "../../../src/platform/connections/app.ts";
import { archiveReleasers } from "../../../src/platform/kit.ts";
import { purgeExpiredArchives } from "../../../src/storage/archive-retention.ts";
import { CredentialStore } from "../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { withFsHook } from "../../helpers/fs-hook.ts";

// A record's folder (`servers/gh`) swapped for a file after foldersIn listed it: the release finds
// no record there, so the credential it names is not released; the archive is kept, not reported
// removed with nothing left alone while its credential stays sealed with nothing naming it.

const DAY_MS = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 11, 1);
const GONE = `ws_${"a".repeat(16)}`;
const OLD = `${GONE}-${NOW - 40 * DAY_MS}`;
const REC = `con_${"3".repeat(24)}`;
const FIELD = "auth.value";
const KEYS = { keys: new Map([[1, randomBytes(32)]]), newest: 1 };

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-swapped-record-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

it("keeps an archive whose record folder was swapped for a file while it was released", async () => {
  const layout = new StorageLayout(root);
  const credentials = await CredentialStore.open(layout, KEYS);
  const cred = await credentials.put(REC, FIELD, "sk-archived");
  const gh = join(root, "_archive", OLD, "connections", "servers", "gh");
  await mkdir(gh, { recursive: true });
  await writeFile(join(root, "_archive", OLD, "workspace.json"), "{}");
  const record = join(gh, "connection.json");
  await writeFile(
    record,
    JSON.stringify({
      id: REC,
      name: "gh",
      workspaceId: GONE,
      url: "https://e.test/",
      auth: { kind: "static", header: "x", credential: cred },
    }),
  );
  // Right when the reader turns to the record (after foldersIn listed `gh`), `gh` becomes a file.
  let done = false;
  const report = await withFsHook(
    "lstat",
    (real) =>
      async (path, ...rest) => {
        if (!done && path === record) {
          done = true;
          await rename(gh, join(root, "aside"));
          await writeFile(gh, "not a folder");
        }
        return real(path, ...rest);
      },
    () =>
      purgeExpiredArchives({
        layout,
        retentionMs: 30 * DAY_MS,
        now: () => NOW,
        isLive: () => false,
        releasers: archiveReleasers([connectionsApp], { layout, credentials }),
        cause: "t",
        log: createLogger("silent"),
      }),
  );
  expect(done).toBe(true);
  // The credential was not released (its record was never read), so the archive is kept for the
  // next round, saying why.
  expect(await credentials.open(cred, REC, FIELD)).toBe("sk-archived");
  expect(report.removed.map((r) => r.name)).not.toContain(OLD);
  expect(report.failed.map((f) => [f.entry.name, String(f.error)])).toEqual([
    [OLD, expect.stringContaining("swapped while it was read")],
  ]);
});
