import { describe, expect, it } from "vitest";
import {
  compileLinear,
  linearRegExp,
  MAX_PATTERN_INSTRUCTIONS,
  UnmatchablePattern,
} from "../../../../src/platform/json-schema/linear-regexp.ts";

describe("a schema pattern matched by RE2", () => {
  it("answers a near-match of a nested quantifier, which V8 backtracks on for minutes, at once and rightly", () => {
    // V8's RegExp needs ~2^n steps here (91 s at 35 characters); RE2 reads the string once.
    const evil = linearRegExp("^(a+)+$", "u");
    expect(evil.test(`${"a".repeat(100_000)}!`)).toBe(false);
    expect(evil.test("a".repeat(100_000))).toBe(true);
  });

  it("matches what ECMA-262 matches for the patterns schemas use", () => {
    const cases: [string, string, boolean][] = [
      ["^[a-zA-Z0-9_-]+$", "abc_-9", true],
      ["^\\d{4}-\\d{2}-\\d{2}$", "2026-01-31", true],
      ["^\\d{4}-\\d{2}-\\d{2}$", "2026-1-31", false],
      ["^https?://", "ftp://x", false],
      ["(?<year>\\d{4})", "in 2026", true],
      ["^\\u0041\\u{1F600}$", "A😀", true],
      ["^.$", "😀", true],
      ["^\\p{Lu}\\p{L}*$", "Élan", true],
      ["^[^]$", "\n", true],
      ["b", "abc", true],
    ];
    for (const [pattern, text, matches] of cases) {
      expect(linearRegExp(pattern, "u").test(text), `${pattern} on ${text}`).toBe(matches);
    }
  });

  it("keeps one matcher per pattern apart: ajv files them under their string", () => {
    expect(String(linearRegExp("a", "u"))).not.toBe(String(linearRegExp("b", "u")));
  });

  it("refuses a lookaround or a backreference, naming the pattern and why", () => {
    for (const pattern of ["^(?!\\s*$).+", "(?<=a)b", "(a)\\1", "\\d+(?=px)", "^\\p{Script=Greek}+$"]) {
      expect(() => compileLinear(pattern), pattern).toThrow(UnmatchablePattern);
      expect(() => compileLinear(pattern), pattern).toThrow(`the pattern "${pattern}" cannot be matched`);
    }
  });

  it("refuses a pattern that compiles larger than the cap, and says to use minLength/maxLength", () => {
    expect(() => compileLinear("^[a-z0-9]{1,255}$")).not.toThrow();
    expect(() => compileLinear("^.{0,1000}$")).toThrow(`more than ${MAX_PATTERN_INSTRUCTIONS}`);
    expect(() => compileLinear("^.{0,1000}$")).toThrow("minLength/maxLength");
  });

  it("refuses what is not ECMA-262 even where RE2 would read it, as ajv did", () => {
    for (const pattern of ["(?i)abc", "a{,3}", "(unclosed"]) {
      expect(() => compileLinear(pattern), pattern).toThrow(SyntaxError);
    }
  });
});
