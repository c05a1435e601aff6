import { describe, expect, it, vi } from "vitest";
import {
  compileLinear,
  linearRegExp,
  MAX_MATCH_UNITS,
  MAX_PATTERN_INSTRUCTIONS,
  MatchBudgetExceeded,
  UnmatchablePattern,
  withinMatchBudget,
} from "../../../../src/platform/json-schema/linear-regexp.ts";

describe("a schema pattern matched by RE2", () => {
  it("answers a near-match of a nested quantifier, which V8 backtracks on for minutes, at once and rightly", () => {
    // V8's RegExp needs ~2^n steps here (91 s at 35 characters); RE2 reads the string once.
    const evil = linearRegExp("^(a+)+$", "u");
    expect(withinMatchBudget(() => evil.test(`${"a".repeat(100_000)}!`))).toBe(false);
    expect(withinMatchBudget(() => evil.test("a".repeat(100_000)))).toBe(true);
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
      const matcher = linearRegExp(pattern, "u");
      expect(
        withinMatchBudget(() => matcher.test(text)),
        `${pattern} on ${text}`,
      ).toBe(matches);
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

describe("the pattern-match budget of one validation", () => {
  // "[ab]*a[ab]{990}[cd]" compiles to 996 instructions; a match costs (length + 1) × 996 + 30 units.
  const pattern = "[ab]*a[ab]{990}[cd]";
  const longest = Math.floor((MAX_MATCH_UNITS - 30) / 996) - 1;

  it("lets one match as long as the budget allows and refuses one character more, before matching", () => {
    const matcher = linearRegExp(pattern, "u");
    expect(withinMatchBudget(() => matcher.test("ab".repeat(longest / 2)))).toBe(false);
    const over = () => withinMatchBudget(() => matcher.test("a".repeat(longest + 1)));
    expect(over).toThrow(MatchBudgetExceeded);
    expect(over).toThrow(
      `the pattern "${pattern}" (996 instructions) on a string of ${(longest + 1).toLocaleString("en-US")} characters went past it`,
    );
    expect(over).toThrow("send a shorter string");
  });

  it("sums every match of one validation, each validation starting afresh", () => {
    const matcher = linearRegExp(pattern, "u");
    const half = "a".repeat(Math.floor(longest / 2));
    let matched = 0;
    const twice = () =>
      withinMatchBudget(() => {
        matcher.test(half);
        matched++;
        matcher.test(`${half}${half}`);
        matched++;
      });
    expect(twice).toThrow(MatchBudgetExceeded);
    expect(matched).toBe(1);
    // The budget of the refused validation is not carried into the next one.
    expect(withinMatchBudget(() => matcher.test(half))).toBe(false);
    // One inside another spends the outer one's budget.
    expect(() =>
      withinMatchBudget(() => [half, half, half].map((text) => withinMatchBudget(() => matcher.test(text)))),
    ).toThrow(MatchBudgetExceeded);
  });

  it("refuses a match outside any validation's budget, as a bug in the caller", () => {
    expect(() => linearRegExp("a", "u").test("a")).toThrow("outside withinMatchBudget");
  });

  it("never builds RE2's DFA, whose cost per character is not bounded by the pattern's size", () => {
    // A DFA whose states outgrow its cache builds one per character: ≈ 88 ns per unit on short
    // strings, six times the automaton's worst, so the budget would not bound it (ADR 0104).
    const re2Prototype = Object.getPrototypeOf(compileLinear("a").re2());
    const dfa = vi.spyOn(re2Prototype, "dfa", "get");
    try {
      const matcher = linearRegExp("[ab]*a[ab]{20}[cd]", "u");
      for (const text of ["ab".repeat(500), "abc", ""]) withinMatchBudget(() => matcher.test(text));
      expect(dfa).not.toHaveBeenCalled();
    } finally {
      dfa.mockRestore();
    }
  });
});
