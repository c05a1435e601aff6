import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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
    const script = `const { listVersions } = await import(${JSON.stringify(history)}); const v = await listVersions(${JSON.stringify(dir)}); console.log(v.length, v[0].version, v.at(-1).version);`;
    const { stdout } = await run("bash", [
      "-c",
      `ulimit -n 200 && exec "${process.execPath}" --import tsx --input-type=module -e '${script}'`,
    ]);
    expect(stdout.trim()).toBe(`${VERSIONS} 1 ${VERSIONS}`);
  });
});
