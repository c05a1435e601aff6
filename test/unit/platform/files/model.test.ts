import { describe, expect, it } from "vitest";
import { checkFileName, checkMimeType } from "../../../../src/platform/files/model.ts";

describe("checkMimeType (RFC 9110 media-type)", () => {
  it.each([
    ["text/plain", "text/plain"],
    ["Text/HTML", "text/html"],
    ["text/plain; charset=utf-8", "text/plain; charset=utf-8"],
    ["text/plain;charset=UTF-8", "text/plain;charset=UTF-8"],
    ['multipart/form-data; boundary="a b;c\\"d"', 'multipart/form-data; boundary="a b;c\\"d"'],
    ["application/vnd.api+json", "application/vnd.api+json"],
    ["text/plain;", "text/plain;"],
    ["text/plain \t; a=1 ;b=2", "text/plain \t; a=1 ;b=2"],
  ])("accepts %j as %j", (input, stored) => {
    expect(checkMimeType(input)).toBe(stored);
  });

  it.each([
    ["a control character in a parameter", "text/plain;\u0001"],
    ["a control character in a quoted value", 'text/plain; a="\u0001"'],
    ["a newline", "text/plain\r\nx-injected: 1"],
    ["DEL", "text/plain; a=b\u007f"],
    ["obs-text", "text/plain; a=\u00e9"],
    ["a character beyond Latin-1", 'text/plain; a="\u2603"'],
    ["no subtype", "text"],
    ["an empty subtype", "text/"],
    ["a space inside the type", "text /plain"],
    ["a parameter without a value", "text/plain; charset"],
    ["a parameter with an empty value", "text/plain; charset="],
    ["an unterminated quoted string", 'text/plain; a="b'],
    ["a bare backslash outside quotes", "text/plain; a=b\\c"],
    ["leading whitespace", " text/plain"],
    ["a type name over 127 characters", `${"a".repeat(128)}/plain`],
    ["a value over 512 characters", `text/plain; a=${"b".repeat(600)}`],
    ["not a string", 42],
  ])("refuses %s", (_label, input) => {
    expect(checkMimeType(input)).toBeUndefined();
  });
});

describe("checkFileName", () => {
  it("keeps a name of whole Unicode text, trimmed", () => {
    expect(checkFileName("  Plan \u{1F600} — café.pdf ")).toBe("Plan \u{1F600} — café.pdf");
  });

  it.each([
    ["empty", "  "],
    ["a control character", "a\u0007b"],
    ["DEL", "a\u007fb"],
    ["a C1 control (NEL)", "a\u0085b"],
    ["a C1 control (CSI)", "a\u009b31mb"],
    ["a bidirectional override (RLO)", "x\u202Etxt.exe"],
    ["a bidirectional embedding (LRE)", "x\u202Ay"],
    ["a bidirectional isolate (RLI)", "x\u2067y"],
    ["a bidirectional isolate's end (PDI)", "x\u2069y"],
    ["a line separator, which breaks a listing's line", "report.txt\u2028fl_0  payroll.xlsx"],
    ["a paragraph separator", "a\u2029b"],
    ["half of a surrogate pair", `a${String.fromCharCode(0xd800)}b`],
    ["256 characters", "a".repeat(256)],
    ["256 emoji", "\u{1F600}".repeat(256)],
    ["only a right-to-left mark", "\u200F"],
    ["only zero-width spaces", "\u200B\u200B"],
    ["only a zero-width joiner", "\u200D"],
    ["only invisible characters and spaces", "\u200B \u2060 \uFEFF"],
    ["only a variation selector", "\uFE0F"],
    ["only a Hangul filler", "\u3164"],
    ["only TAG characters", "\u{E0061}\u{E0062}"],
    ["not a string", 42],
  ])("refuses a name that is %s", (_case, name) => {
    expect(checkFileName(name)).toBeUndefined();
  });

  it.each([
    ["255 letters", "a".repeat(255)],
    ["255 emoji (510 UTF-16 units)", "\u{1F600}".repeat(255)],
    ["128 emoji", "\u{1F600}".repeat(128)],
    ["a letter just past C1 (U+00A0 within)", "a\u00a0b"],
    ["right-to-left text itself", "\u05E9\u05DC\u05D5\u05DD.txt"],
    ["an emoji sequence joined by U+200D", "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}.png"],
    ["a right-to-left mark beside visible text", "\u05E9\u200F.txt"],
    ["an emoji with its presentation selector", "\u26A0\uFE0F"],
  ])("keeps a name of %s", (_case, name) => {
    expect(checkFileName(name)).toBe(name);
  });
});
