import { describe, expect, it } from "vitest";
import { bootProblem, REPEAT_SIGNAL_MS, stopOnRequest } from "../../src/cli.ts";
import { FakeTime, settle } from "../helpers/fake-time.ts";
import { memoryLog } from "../helpers/memory-log.ts";

/** A server whose close() only counts its calls, and a process whose exit only records its code. */
function harness() {
  const time = new FakeTime();
  const { log, lines } = memoryLog();
  const calls = { stop: 0, close: 0 };
  let finish = () => undefined as unknown;
  const closed = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const exits: number[] = [];
  const stop = stopOnRequest(
    {
      stop: () => {
        calls.stop++;
        return closed;
      },
      close: () => {
        calls.close++;
        return closed;
      },
    },
    { log, clock: time.clock, exit: (code) => exits.push(code) },
  );
  return { time, lines, calls, stop, exits, finish };
}

describe("stopping on a signal", () => {
  it("the same Ctrl-C forwarded by npm within a second does not cut the drain short", async () => {
    const { time, calls, stop, lines } = harness();
    stop("SIGINT");
    time.jump(1);
    stop("SIGTERM"); // npm forwarding the terminal's SIGINT a millisecond later
    time.jump(REPEAT_SIGNAL_MS - 2);
    stop("SIGINT");
    expect(calls).toEqual({ stop: 1, close: 0 });
    expect(lines.some((line) => /cutting off/.test(String(line.msg)))).toBe(false);
  });

  it("a signal a second or more after the first cuts off what is in flight", async () => {
    const { time, calls, stop, lines } = harness();
    stop("SIGINT");
    time.jump(REPEAT_SIGNAL_MS);
    stop("SIGINT");
    // The first joins a stop under way (a lost lock's), the second cuts it short.
    expect(calls).toEqual({ stop: 1, close: 1 });
    expect(lines.some((line) => /cutting off requests still in flight/.test(String(line.msg)))).toBe(true);
  });

  it("a second signal after the clock stepped back behind the first cuts off what is in flight", async () => {
    const { time, calls, stop, lines } = harness();
    stop("SIGINT");
    // An NTP correction of an hour during the drain: the operator's second Ctrl-C is a second one,
    // not the first forwarded, however far the clock now reads before the first (ADR 0168).
    time.jump(-60 * 60 * 1000);
    stop("SIGINT");
    expect(calls).toEqual({ stop: 1, close: 1 });
    expect(lines.some((line) => /cutting off requests still in flight/.test(String(line.msg)))).toBe(true);
  });

  it("exits 0 once the graceful stop is done", async () => {
    const { stop, exits, finish } = harness();
    stop("SIGTERM");
    await settle();
    expect(exits).toEqual([]);
    finish();
    await settle();
    expect(exits).toEqual([0]);
  });
});

describe("what a command prints for a problem at boot", () => {
  it("a path it may not read is named with its code and what to do", () => {
    const denied = Object.assign(new Error("EACCES: permission denied"), {
      code: "EACCES",
      path: "/srv/atrium/data/_instance/users",
      syscall: "scandir",
    });
    expect(bootProblem(denied)).toBe(
      "cannot read /srv/atrium/data/_instance/users (EACCES): the user Atrium runs as may not use it; " +
        "give that user ownership of the data root (Atrium makes folders 0700 and files 0600).",
    );
  });

  const refused = (code: string, syscall: string, path?: string) =>
    Object.assign(new Error(`${code}: refused, ${syscall}`), { code, syscall, ...(path && { path }) });

  it.each([
    ["ENOSPC", "the disk holding the data root is full; free space on it and start again."],
    [
      "EDQUOT",
      "the disk quota of the user Atrium runs as is used up; free space or raise the quota, and start again.",
    ],
    [
      "EFBIG",
      "a file met the size limit on one file (`ulimit -f`, or the filesystem's own); raise that limit and start again.",
    ],
    [
      "EROFS",
      "the data root is on a filesystem mounted read-only; mount it read-write (check `dmesg` first) and start again.",
    ],
    [
      "EMFILE",
      "Atrium has as many files open as it may; raise the open-file limit (`ulimit -n`) and start again.",
    ],
    [
      "ENFILE",
      "the system has as many files open as it may; close other programs' files or raise its limit, and start again.",
    ],
  ])("%s is the machine's: said with what to do, never 'restore it from a backup'", (code, advice) => {
    const path = "/srv/atrium/data/_instance/session-secret";
    expect(bootProblem(refused(code, "open", path))).toBe(`open ${path} failed (${code}): ${advice}`);
  });

  it("the machine's refusal with no path (a write on an open file) is said too, not thrown on with a stack", () => {
    expect(bootProblem(refused("ENOSPC", "write"))).toBe(
      "write failed (ENOSPC): the disk holding the data root is full; free space on it and start again.",
    );
  });

  it("any other code with no path is not a boot problem: it keeps its stack", () => {
    expect(bootProblem(refused("EIO", "write"))).toBeUndefined();
  });

  it("anything else is not a boot problem: a bug keeps its stack", () => {
    expect(bootProblem(new TypeError("undefined is not a function"))).toBeUndefined();
  });
});
