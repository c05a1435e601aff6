import { sep } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidPathSegment, parseArchivedName, StorageLayout } from "../../../src/storage/paths.ts";

const ROOT = "/srv/atrium-data";
const WS = "ws_0123456789abcdef";
const USR = "usr_0123456789abcdef01234567";
const REC = "fl_0123456789abcdef01234567";

// Values no segment grammar may accept: each would walk out of its folder, name a folder
// that is not its own, or be spelled differently on another filesystem.
const HOSTILE = {
  "dot-dot": "..",
  "dot-dot prefix": "../ws_0123456789abcdef",
  "dot-dot suffix": `${WS}/..`,
  "absolute path": "/etc/passwd",
  "slash inside": "ws_01234567/89abcdef",
  "backslash inside": "ws_01234567\\89abcdef",
  NUL: "ws_0123456789abcde\0",
  "trailing newline": `${WS}\n`,
  "unicode digits": "ws_０１２３４５６７８９ａｂｃｄｅｆ",
  "unicode letter": "ws_0123456789abcdé",
  overlong: `ws_${"a".repeat(10_000)}`,
  empty: "",
  dot: ".",
} as const;

function expectRefused(build: () => string, kind: string): void {
  let thrown: unknown;
  try {
    build();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidPathSegment);
  expect((thrown as InvalidPathSegment).kind).toBe(kind);
}

describe("StorageLayout", () => {
  const layout = new StorageLayout(ROOT);

  describe("refuses a workspace id outside its grammar", () => {
    const cases: Record<string, string> = {
      ...HOSTILE,
      uppercase: "WS_0123456789ABCDEF",
      "uppercase hex": "ws_0123456789ABCDEF",
      "wrong prefix (principal)": "usr_0123456789abcdef",
      "wrong prefix (file)": "fl_0123456789abcdef",
      "reserved folder": "_archive",
      "one hex too few": "ws_0123456789abcde",
      "one hex too many": "ws_0123456789abcdef0",
    };
    for (const [label, value] of Object.entries(cases)) {
      it(label, () => {
        expectRefused(() => layout.workspaceDir(value), "workspace id");
        expectRefused(() => layout.workspaceFile(value), "workspace id");
        expectRefused(() => layout.ownerDir(value, "files", USR), "workspace id");
        expectRefused(() => layout.recordDir(value, "files", USR, REC), "workspace id");
      });
    }
  });

  describe("refuses a principal id outside its grammar", () => {
    const cases: Record<string, string> = {
      ...HOSTILE,
      "dot-dot suffix": `${USR}/..`,
      uppercase: "USR_0123456789ABCDEF01234567",
      "wrong prefix (workspace)": WS,
      "wrong prefix (user)": "user_0123456789abcdef01234567",
      "one hex too few": "usr_0123456789abcdef0123456",
      "one hex too many": "usr_0123456789abcdef012345678",
    };
    for (const [label, value] of Object.entries(cases)) {
      it(label, () => {
        expectRefused(() => layout.userDir(value), "principal id");
        expectRefused(() => layout.ownerDir(WS, "files", value), "owner");
        expectRefused(() => layout.recordDir(WS, "files", value, REC), "owner");
      });
    }
  });

  describe("refuses a record id outside its grammar", () => {
    const cases: Record<string, string> = {
      ...HOSTILE,
      "dot-dot suffix": `${REC}/..`,
      uppercase: "FL_0123456789ABCDEF01234567",
      "one-letter prefix": "f_0123456789abcdef01234567",
      "five-letter prefix": "files_0123456789abcdef01234567",
      "no prefix": "0123456789abcdef01234567",
      "15 hex": "fl_0123456789abcde",
      "33 hex": `fl_${"a".repeat(33)}`,
      "non-hex": "fl_0123456789abcdefghijklmn",
    };
    for (const [label, value] of Object.entries(cases)) {
      it(label, () => {
        expectRefused(() => layout.recordDir(WS, "files", USR, value), "record id");
      });
    }
  });

  it("does not echo a 10 kB hostile value back in its message", () => {
    expect(() => layout.workspaceDir(`../${"x".repeat(10_000)}`)).toThrow(
      /^Invalid workspace id: ".{1,70}"$/s,
    );
  });

  it("builds every path under the root, segment by segment", () => {
    expect(layout.root).toBe(ROOT);
    expect(layout.workspaceDir(WS)).toBe(`${ROOT}/${WS}`);
    expect(layout.workspaceFile(WS)).toBe(`${ROOT}/${WS}/workspace.json`);
    expect(layout.archiveDir()).toBe(`${ROOT}/_archive`);
    expect(layout.instanceDir()).toBe(`${ROOT}/_instance`);
    expect(layout.userDir(USR)).toBe(`${ROOT}/_instance/users/${USR}`);
    expect(layout.ownerDir(WS, "files", USR)).toBe(`${ROOT}/${WS}/files/${USR}`);
    expect(layout.recordDir(WS, "files", USR, REC)).toBe(`${ROOT}/${WS}/files/${USR}/${REC}`);
    for (const path of [
      layout.workspaceDir(WS),
      layout.workspaceFile(WS),
      layout.archiveDir(),
      layout.instanceDir(),
      layout.userDir(USR),
      layout.ownerDir(WS, "files", USR),
      layout.recordDir(WS, "files", USR, REC),
    ]) {
      expect(path.startsWith(ROOT + sep)).toBe(true);
    }
  });

  it("accepts the record-id grammar's bounds (2-4 letter prefix, 16-32 hex)", () => {
    for (const id of [
      "ab_0123456789abcdef",
      "abcd_0123456789abcdef0123456789abcdef",
      "run_0123456789abcdef",
    ]) {
      expect(layout.recordDir(WS, "files", USR, id)).toBe(`${ROOT}/${WS}/files/${USR}/${id}`);
    }
  });

  it("resolves a relative or trailing-slash root to one absolute root", () => {
    expect(new StorageLayout(`${ROOT}/`).root).toBe(ROOT);
    expect(new StorageLayout(`${ROOT}/sub/..`).root).toBe(ROOT);
    const relative = new StorageLayout("data");
    expect(relative.root).toBe(`${process.cwd()}${sep}data`);
    expect(relative.workspaceDir(WS).startsWith(relative.root + sep)).toBe(true);
  });
});

describe("archivedCopies", () => {
  const layout = new StorageLayout(ROOT);
  const staging = `${ROOT}/${WS}/files/${USR}/.tmp-${REC}-0a1b2c3d`;

  it("maps a path in a workspace to the same place in each archive of that workspace", () => {
    const archived = [`${WS}-1700000000000`, "ws_ffffffffffffffff-1700000000000", `${WS}-x`, `${WS}`];
    expect(layout.archivedCopies(WS, staging, archived)).toEqual([
      `${ROOT}/_archive/${WS}-1700000000000/files/${USR}/.tmp-${REC}-0a1b2c3d`,
    ]);
  });

  it("refuses a path that is not inside the workspace's folder", () => {
    for (const path of [`${ROOT}/${WS}`, `${ROOT}/ws_ffffffffffffffff/files`, `${ROOT}/_instance`]) {
      expect(() => layout.archivedCopies(WS, path, [`${WS}-1`])).toThrow(InvalidPathSegment);
    }
  });
});

describe("archived workspace folders", () => {
  const layout = new StorageLayout(ROOT);

  it("reads the workspace and the archive instant from an archive's name, and nothing else", () => {
    expect(parseArchivedName(`${WS}-1767225600000`)).toEqual({
      workspaceId: WS,
      archivedAtMs: 1767225600000,
    });
    for (const name of [
      WS,
      `${WS}-`,
      `${WS}-12x`,
      `${WS}-1-2`,
      `.purging-${WS}-1`,
      `ws_XYZ-1`,
      `${WS}-${"9".repeat(17)}`,
    ]) {
      expect(parseArchivedName(name)).toBeUndefined();
    }
  });

  it("builds an archive's folder and its removal folder under _archive/ only from an archive's name", () => {
    expect(layout.archivedFolder(`${WS}-1`)).toBe(`${ROOT}${sep}_archive${sep}${WS}-1`);
    expect(layout.purgingFolder(`${WS}-1`)).toBe(`${ROOT}${sep}_archive${sep}.purging-${WS}-1`);
    for (const name of ["..", `../${WS}-1`, `${WS}-1/..`, "operator-notes"]) {
      expect(() => layout.archivedFolder(name)).toThrow(InvalidPathSegment);
      expect(() => layout.purgingFolder(name)).toThrow(InvalidPathSegment);
    }
  });
});
