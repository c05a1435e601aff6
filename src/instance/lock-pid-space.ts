import { readFile, readlink } from "node:fs/promises";

// A PID names a process only in the PID namespace it was read in, and only until the kernel
// reboots (ADR 0133). The host name says neither: two containers on one host (`docker run
// --network host`, a compose file's fixed `hostname:`) or `unshare --pid` share it, and each has
// its own PID 1. A lock records where its PID was read, and its PID is checked here only when
// this process reads PIDs in the same place; otherwise only the lock's heartbeat tells.

/** Where this process's PIDs mean something. */
export interface PidSpace {
  /** `readlink /proc/self/ns/pid` (`pid:[4026531836]`); null where it cannot be read. */
  pidNs: string | null;
  /** `/proc/sys/kernel/random/boot_id`; null where it cannot be read. */
  bootId: string | null;
}

/** This process's PID space, from /proc. Null fields where there is no /proc (not Linux). */
export async function readPidSpace(): Promise<PidSpace> {
  const [pidNs, bootId] = await Promise.all([
    readlink("/proc/self/ns/pid").catch(() => null),
    readFile("/proc/sys/kernel/random/boot_id", "utf8").then(
      (text) => text.trim() || null,
      () => null,
    ),
  ]);
  return { pidNs, bootId };
}

/**
 * Whether a PID recorded in `recorded`'s PID space can be checked from `here`, by `kill(pid, 0)`
 * or against this process's own PID. Never for a lock without the fields (written before ADR
 * 0133: it may come from another container, so it is judged by its heartbeat alone), nor on
 * Linux when this process cannot read its own (unknown is not "the same"). Where there are no
 * PID namespaces (macOS: both sides null) the host name is enough, as before.
 */
export function canCheckPid(
  recorded: { pidNs?: string | null; bootId?: string | null },
  here: PidSpace,
  platform: NodeJS.Platform = process.platform,
): boolean {
  if (recorded.pidNs === undefined || recorded.bootId === undefined) return false;
  if (platform === "linux" && (here.pidNs === null || here.bootId === null)) return false;
  return recorded.pidNs === here.pidNs && recorded.bootId === here.bootId;
}

/** Whether `pid` is a live process here; only meaningful where `canCheckPid` says so. */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by someone else.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}
