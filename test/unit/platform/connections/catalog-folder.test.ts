import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CATALOG_RECHECK_MS,
  CatalogFolder,
  listCatalogFiles,
  MAX_CATALOG_FILES,
} from "../../../../src/platform/connections/catalog-folder.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";

const PAST_LIMIT = 50;
let dir: string;

function fileName(index: number): string {
  return `f${String(index).padStart(6, "0")}.json`;
}

async function putServer(index: number): Promise<void> {
  const server = { name: `com.example/s${index}`, description: "d", version: "1" };
  await writeFile(join(dir, fileName(index)), JSON.stringify(server));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-catalog-many-"));
  for (let i = 0; i < MAX_CATALOG_FILES + PAST_LIMIT; i++) await putServer(i);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a catalog folder with more files than the catalog reads", () => {
  it("reads the first by name and reports the rest as one problem, logged once", async () => {
    const time = new FakeTime();
    const logged = memoryLog();
    const folder = new CatalogFolder(dir, time.clock, logged.log);
    const skipped = () => logged.lines.filter((line) => line.msg === "catalog entry skipped");

    const first = await folder.read();
    expect(first.entries).toHaveLength(MAX_CATALOG_FILES);
    expect(first.entries.at(-1)?.file).toBe(fileName(MAX_CATALOG_FILES - 1));
    expect(first.problems).toEqual([
      {
        file: ".",
        message: `${PAST_LIMIT} more files not read; the catalog reads at most ${MAX_CATALOG_FILES}, the first by name.`,
      },
    ]);
    expect(skipped()).toHaveLength(1);

    await time.advance(CATALOG_RECHECK_MS);
    expect((await folder.read()).problems).toHaveLength(1);
    expect(skipped()).toHaveLength(1);

    // One more file past the limit changes the count, which is logged once more.
    await putServer(MAX_CATALOG_FILES + PAST_LIMIT);
    await time.advance(CATALOG_RECHECK_MS);
    expect((await folder.read()).problems).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^51 more files not read;/) }),
    ]);
    expect(skipped()).toHaveLength(2);
    await rm(join(dir, fileName(MAX_CATALOG_FILES + PAST_LIMIT)));
  });

  it("stats only the files it reads, never the ones past the limit", async () => {
    const statted: string[] = [];
    const listing = await listCatalogFiles(dir, (path) => {
      statted.push(path);
      return stat(path);
    });
    expect(statted).toHaveLength(MAX_CATALOG_FILES);
    expect(listing).toMatchObject({ unread: PAST_LIMIT });
  });
});
