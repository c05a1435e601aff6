import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnAtriumCli, writeCliInstance } from "../helpers/cli.ts";
import { canMount, mountSmallDisk, type SmallDisk } from "../helpers/small-disk.ts";

// `atrium serve` on a data root whose disk has a few KiB left: the instance lock is taken, then a
// later boot write meets ENOSPC on an open file, an error that names no path. It is still the
// machine's problem, said in one `atrium:` line with what to do, not Node's stack of internals
// (src/cli.ts bootProblem, adr/0165). A real tmpfs: skipped where mounting is not permitted.

describe.skipIf(!canMount)("atrium serve on a disk that fills during boot", () => {
  let disk: SmallDisk;
  beforeEach(async () => {
    disk = await mountSmallDisk("8m");
  });
  afterEach(async () => {
    await disk.unmount();
  });

  it("exits 1 with one `atrium:` line saying the disk is full and what to do, no stack", async () => {
    const instance = await writeCliInstance(disk.dir);
    disk.fillLeaving(8192);
    const cli = spawnAtriumCli(["serve", "--instance", instance], disk.dir);
    const timer = setTimeout(() => cli.kill("SIGKILL"), 30_000);
    const exit = await cli.exited;
    clearTimeout(timer);
    expect(exit.code, exit.stderr).toBe(1);
    expect(exit.stderr).toMatch(
      /^atrium: .*\(ENOSPC\): the disk holding the data root is full; free space on it and start again\.\n$/,
    );
    expect(exit.stderr).not.toMatch(/node:internal|\n\s+at /);
  }, 60_000);
});
