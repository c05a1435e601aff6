import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, truncateSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A real full disk: a small tmpfs mounted as a test's temp dir, filled by a filler file until the
// kernel answers ENOSPC, so a write meets what a full disk does (ENOSPC, or a short count when
// some of it fit), not a stand-in. Needs root (mount); tests skip without it (`canMount`).

export const canMount: boolean = (() => {
  const probe = mkdtempSync(join(tmpdir(), "atrium-small-disk-probe-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
})();

export interface SmallDisk {
  dir: string;
  /** Fills the filesystem to its last byte (a filler file grown until ENOSPC). */
  fill(): void;
  /** Fills it, then frees `bytes` (whole pages): a write larger than that is cut short. */
  fillLeaving(bytes: number): void;
  /** Removes the filler: space is free again. */
  free(): Promise<void>;
  unmount(): Promise<void>;
}

export async function mountSmallDisk(size = "8m"): Promise<SmallDisk> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-small-disk-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  const filler = join(dir, "filler");
  const fill = () => {
    // bs=1: the last partial page is taken too, so not even a few bytes fit.
    try {
      execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=64k", "oflag=append", "conv=notrunc"], {
        stdio: "ignore",
      });
    } catch {}
    try {
      execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=1", "oflag=append", "conv=notrunc"], {
        stdio: "ignore",
      });
    } catch {}
  };
  return {
    dir,
    fill,
    fillLeaving(bytes: number) {
      fill();
      truncateSync(filler, Math.max(0, statSync(filler).size - bytes));
    },
    async free() {
      await rm(filler, { force: true });
    },
    async unmount() {
      try {
        execFileSync("umount", ["-l", dir], { stdio: "ignore" });
      } catch {}
      await rm(dir, { recursive: true, force: true });
    },
  };
}
