import { readFile, readlink } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { canCheckPid, type PidSpace, readPidSpace } from "../../../src/instance/lock-pid-space.ts";

const here: PidSpace = { pidNs: "pid:[4026531836]", bootId: "e3b55f9c-b313-4615-b2d5-fd7ea07eb722" };

describe("canCheckPid", () => {
  it("checks a PID recorded in this process's PID namespace on this boot", () => {
    expect(canCheckPid({ ...here }, here, "linux")).toBe(true);
  });

  it("does not check one from another PID namespace, or another boot", () => {
    expect(canCheckPid({ ...here, pidNs: "pid:[4026532175]" }, here, "linux")).toBe(false);
    expect(canCheckPid({ ...here, bootId: "00000000-0000-4000-8000-000000000000" }, here, "linux")).toBe(
      false,
    );
    expect(canCheckPid({ ...here, pidNs: null }, here, "linux")).toBe(false);
  });

  it("does not check one from a lock that does not say where its PID was read (an older Atrium)", () => {
    expect(canCheckPid({}, here, "linux")).toBe(false);
    expect(canCheckPid({ pidNs: here.pidNs }, here, "linux")).toBe(false);
  });

  it("on Linux, does not check any when this process cannot read its own: unknown is not the same", () => {
    const unknown = { pidNs: null, bootId: null };
    expect(canCheckPid(unknown, unknown, "linux")).toBe(false);
  });

  it("where there are no PID namespaces (macOS), checks one recorded there as before", () => {
    const none = { pidNs: null, bootId: null };
    expect(canCheckPid(none, none, "darwin")).toBe(true);
    expect(canCheckPid({}, none, "darwin")).toBe(false);
  });
});

describe("readPidSpace", () => {
  it.runIf(process.platform === "linux")(
    "reads this process's PID namespace and boot id from /proc",
    async () => {
      expect(await readPidSpace()).toEqual({
        pidNs: await readlink("/proc/self/ns/pid"),
        bootId: (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim(),
      });
    },
  );
});
