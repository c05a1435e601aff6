import { readFileSync } from "node:fs";

// Linux reports a process's CPU time in /proc/<pid>/stat in USER_HZ ticks, which the kernel ABI
// fixes at 100 per second whatever the kernel's own tick rate.
const US_PER_TICK = 10_000;

/**
 * The CPU time a process has used so far, user plus system over all its threads, in µs; or
 * `undefined` where /proc is not available. On a shared machine the CPU a server spends per
 * request moves far less than its requests/s, which other work on the cores drags down.
 */
export function processCpuUs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces; count from after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return (utime + stime) * US_PER_TICK;
}
