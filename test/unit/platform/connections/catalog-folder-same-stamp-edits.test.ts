import type { Stats } from "node:fs";
import { mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { CATALOG_RECHECK_MS, CatalogFolder } from "../../../../src/platform/connections/catalog-folder.ts";
import { RACY_MS } from "../../../../src/storage/file-stamp.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";

// The operator's catalog folder was fingerprinted by each file's name, size, mtime and inode, with
// no change time and no racy rule: an edit keeping the size and landing in the same time tick as
// the look before it (or a copy that kept its source's mtime) was never seen. It now keeps its
// files by the skills' rule (storage/file-stamp.ts; adr/0038 and 0051, amended).

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-catalog-stamps-"));
  file = join(dir, "weather.json");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A server.json whose description is `text`: two of one length are files of one size. */
function weather(text: string): string {
  return JSON.stringify({ name: "io.github.acme/weather", description: text, version: "1.0.0" });
}

const descriptionOf = async (folder: CatalogFolder) => (await folder.read()).entries[0]?.server.description;

it("an edit that keeps the size and lands in the tick of the last look is seen at the next look", async () => {
  await writeFile(file, weather("Forecasts AAAA"));
  // A file system that keeps times to a 2 s tick: both writes land in the tick starting at `tick`.
  const tick = Date.UTC(2026, 11, 7, 12, 0, 0);
  const time = new FakeTime(tick + 500);
  const folder = new CatalogFolder(dir, time.clock, memoryLog().log);
  const reads: string[] = [];
  const look = () =>
    withFsHook(
      "stat",
      (real) =>
        (async (...args: Parameters<typeof real>) => {
          const info = (await real(...args)) as Stats;
          if (String(args[0]) !== file) return info;
          return Object.assign(Object.create(Object.getPrototypeOf(info)), info, {
            mtimeMs: tick,
            ctimeMs: tick,
          });
        }) as typeof real,
      () =>
        withFsHook(
          "readFile",
          (real) =>
            (async (...args: Parameters<typeof real>) => {
              if (String(args[0]) === file) reads.push("read");
              return real(...args);
            }) as typeof real,
          () => descriptionOf(folder),
        ),
    );

  expect(await look()).toBe("Forecasts AAAA");
  await writeFile(file, weather("Forecasts BBBB"));
  await time.advance(CATALOG_RECHECK_MS);
  expect(await look()).toBe("Forecasts BBBB");

  // Once the tick is RACY_MS behind a look, the stamps are trusted: the file is read no more.
  await time.advance(RACY_MS);
  expect(await look()).toBe("Forecasts BBBB");
  const after = reads.length;
  expect(after).toBeGreaterThan(0);
  await time.advance(CATALOG_RECHECK_MS);
  expect(await look()).toBe("Forecasts BBBB");
  expect(reads).toHaveLength(after);
});

it("an edit that keeps the size and the modification time (cp -p, touch -r) is seen: its change time moved", async () => {
  await writeFile(file, weather("Forecasts AAAA"));
  // A whole second, which utimes sets exactly, long before the looks.
  const kept = new Date(Date.now() - 60_000);
  kept.setMilliseconds(0);
  await utimes(file, kept, kept);
  const time = new FakeTime(Date.now() + 60_000);
  const folder = new CatalogFolder(dir, time.clock, memoryLog().log);
  expect(await descriptionOf(folder)).toBe("Forecasts AAAA");

  const before = await stat(file);
  await writeFile(file, weather("Forecasts BBBB"));
  await utimes(file, kept, kept);
  const edited = await stat(file);
  expect([edited.size, edited.mtimeMs, edited.ino]).toEqual([before.size, before.mtimeMs, before.ino]);
  expect(await readFile(file, "utf8")).toContain("BBBB");

  await time.advance(CATALOG_RECHECK_MS);
  expect(await descriptionOf(folder)).toBe("Forecasts BBBB");
});
