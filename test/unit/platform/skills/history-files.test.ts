import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listVersions, MAX_VERSIONS_KEPT, recordVersion } from "../../../../src/platform/skills/history.ts";

const run = promisify(execFile);
const VERSIONS = 1_000;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-skill-history-"));
  for (let n = 1; n <= VERSIONS; n++) {
    await writeFile(join(dir, `${n}.md`), `version ${n}`);
    await writeFile(
      join(dir, `${n}.json`),
      JSON.stringify({ version: n, savedAt: new Date(n).toISOString() }),
    );
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a long skill history", () => {
  it("is read with a few files open at a time: 1,000 versions under a limit of 200 descriptors", async () => {
    // All at once, the reads used up the process's descriptors (EMFILE) — here, below 1,000.
    const history = join(process.cwd(), "src", "platform", "skills", "history.ts");
    const script = `const { listVersions } = await import(${JSON.stringify(history)}); const v = await listVersions(${JSON.stringify(dir)}, ${JSON.stringify(dir)}); console.log(v.length, v[0].version, v.at(-1).version);`;
    const { stdout } = await run("bash", [
      "-c",
      `ulimit -n 200 && exec "${process.execPath}" --import tsx --input-type=module -e '${script}'`,
    ]);
    expect(stdout.trim()).toBe(`${VERSIONS} 1 ${VERSIONS}`);
  });
});

describe("a skill's history", () => {
  it(`keeps the newest ${MAX_VERSIONS_KEPT} versions, numbers still growing`, async () => {
    const versions = await mkdtemp(join(tmpdir(), "atrium-skill-versions-"));
    try {
      for (let i = 1; i <= MAX_VERSIONS_KEPT + 5; i += 1) {
        expect(await recordVersion(versions, `text ${i}`, new Date(i).toISOString())).toBe(i);
      }
      const kept = await listVersions(versions, versions);
      expect(kept).toHaveLength(MAX_VERSIONS_KEPT);
      expect(kept[0]?.version).toBe(6);
      expect(kept.at(-1)?.version).toBe(MAX_VERSIONS_KEPT + 5);
      expect(await readdir(versions)).toHaveLength(2 * MAX_VERSIONS_KEPT);
    } finally {
      await rm(versions, { recursive: true, force: true });
    }
  });
});
