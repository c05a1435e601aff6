import { describe, expect, it } from "vitest";
import {
  isSourceName,
  joinToolName,
  splitToolName,
  TOOL_NAME_SEPARATOR,
} from "../../../src/sources/tool-names.ts";

describe("splitToolName", () => {
  it("splits at the separator", () => {
    expect(splitToolName("files__read")).toEqual({ source: "files", tool: "read" });
  });

  it("splits at the FIRST separator, so a tool name may itself contain one", () => {
    expect(splitToolName("a__b__c")).toEqual({ source: "a", tool: "b__c" });
    expect(splitToolName("a___b")).toEqual({ source: "a", tool: "_b" });
  });

  it("is undefined without a separator or with an empty side", () => {
    for (const name of ["", "files", "files_read", "__read", "files__", "__", "___", "___x"]) {
      expect(splitToolName(name), name).toBeUndefined();
    }
  });

  it("inverts joinToolName", () => {
    for (const [source, tool] of [
      ["files", "read"],
      ["my-app", "do__thing"],
      ["x", "_"],
    ] as const) {
      expect(splitToolName(joinToolName(source, tool))).toEqual({ source, tool });
    }
  });
});

describe("joinToolName", () => {
  it("is <source>__<tool>", () => {
    expect(TOOL_NAME_SEPARATOR).toBe("__");
    expect(joinToolName("files", "list")).toBe("files__list");
  });
});

describe("isSourceName", () => {
  it("accepts lowercase names that start with a letter, up to 63 characters, and the my_ prefix", () => {
    for (const name of ["files", "a", "my-app2", `a${"b".repeat(62)}`, "my_notes", `my_a${"b".repeat(62)}`])
      expect(isSourceName(name), name).toBe(true);
  });

  it("refuses names that could not be split back out of a tool name", () => {
    for (const name of [
      "",
      "a__b",
      "a_b",
      "my__notes",
      "my_",
      "my_my_x",
      "your_notes",
      "Files",
      "1files",
      "-x",
      `a${"b".repeat(63)}`,
      "fïles",
      "a b",
    ]) {
      expect(isSourceName(name), name).toBe(false);
    }
  });
});
