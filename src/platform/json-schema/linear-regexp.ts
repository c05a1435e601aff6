import type { RegExpEngine, RegExpLike } from "ajv/dist/types/index.js";
import { RE2JS } from "re2js";
import { CheckBudget } from "./check-budget.ts";
import { CheckTooCostly } from "./check-too-costly.ts";

// A schema's `pattern` is matched by RE2 (the pure-JavaScript re2js), never by V8's RegExp: V8
// backtracks, and a member's "^(a+)+$" against 35 characters held the event loop for 91 s.
// RE2's time is linear in the string, times the size of the compiled pattern, so that size is
// capped (ADR 0064): past about 2,000 instructions RE2 measured 40-80 s per MiB.
export const MAX_PATTERN_INSTRUCTIONS = 1000;

// The cap is per pattern, and RE2 still costs ≈ 7-15 ns per character per instruction: one
// pattern of 996 instructions on 2 MiB held the event loop 20 s, and allOf, arrays and
// patternProperties repeat matches. So one validation may spend at most this many units, a match
// costing (length + 1) × instructions + MATCH_SETUP_UNITS; at the limit the worst input measured
// costs ≈ 75 ms of CPU (ADR 0104).
export const MAX_MATCH_UNITS = 5_000_000;
// What a match costs before it reads a character (its matcher, RE2's start: 0.1-0.5 µs measured),
// in units, so an array of 100,000 empty strings is charged for its 100,000 matches.
const MATCH_SETUP_UNITS = 30;

/** A valid ECMA-262 pattern that RE2 cannot match, or not within the size Atrium allows. */
export class UnmatchablePattern extends Error {
  constructor(
    readonly pattern: string,
    why: string,
  ) {
    super(`the pattern "${pattern}" cannot be matched in linear time: ${why}`);
    this.name = "UnmatchablePattern";
  }
}

/** A validation that would match its patterns past MAX_MATCH_UNITS; stopped before that match. */
export class MatchBudgetExceeded extends CheckTooCostly {
  constructor(
    readonly pattern: string,
    readonly instructions: number,
    readonly length: number,
  ) {
    super(
      `matching its strings against the schema's patterns would take more than the ${MAX_MATCH_UNITS.toLocaleString("en-US")} units one check may spend (a string's length times its pattern's RE2 instructions, summed over every match); the pattern "${pattern.slice(0, 100)}" (${instructions} instructions) on a string of ${length.toLocaleString("en-US")} characters went past it: send a shorter string (a maxLength says how long one may be), or simplify the pattern (fewer or smaller repetitions)`,
    );
    this.name = "MatchBudgetExceeded";
  }
}

const budget = new CheckBudget(
  MAX_MATCH_UNITS,
  "a schema pattern was matched outside withinMatchBudget: run every validation of a schema Atrium did not write inside one (ADR 0104)",
);

/**
 * Runs `validate` — one validation, or the compile that checks a schema against its meta-schema —
 * with MAX_MATCH_UNITS to spend on pattern matches; a match past it throws MatchBudgetExceeded
 * out of `validate` before it runs. Inside another, it spends the outer one's budget.
 */
export function withinMatchBudget<T>(validate: () => T): T {
  return budget.within(validate);
}

/**
 * `pattern` compiled by RE2. A pattern that is not ECMA-262 (JSON Schema's dialect) throws
 * V8's SyntaxError, as ajv's own engine did: what RE2 would read differently (`(?i)`, `a{,3}`) is
 * not let in. One RE2 refuses (a lookaround, a backreference, a `\p{Script=…}`) or that compiles
 * too large throws `UnmatchablePattern`.
 */
export function compileLinear(pattern: string): RE2JS {
  // Parsed only, never run: V8 compiles a RegExp on its first match, and the parse is linear.
  new RegExp(pattern, "u");
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    const said = (error as Error).message.replace(/^error parsing regexp: /, "");
    throw new UnmatchablePattern(
      pattern,
      `RE2 refuses it (${said}); lookaheads, lookbehinds, backreferences and Unicode properties other than short general categories such as \\p{L} are not supported, so write the pattern without them`,
    );
  }
  const size = instructionsOf(compiled);
  if (size > MAX_PATTERN_INSTRUCTIONS) {
    throw new UnmatchablePattern(
      pattern,
      `it compiles to ${size} RE2 instructions, more than ${MAX_PATTERN_INSTRUCTIONS}; bound a length with minLength/maxLength instead of a large {n,m} count`,
    );
  }
  return compiled;
}

/**
 * ajv's `code.regExp`: every `pattern` and `patternProperties` key of a schema compiled with it is
 * matched by RE2, and one that cannot be throws while the schema compiles, never while it checks.
 * A match is charged to the validation's budget before it runs, and only runs inside one.
 */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    const compiled = compileLinear(pattern);
    const size = instructionsOf(compiled);
    // ajv keeps one matcher per instance under this string: it must differ between patterns.
    const matcher: RegExpLike & { toString(): string } = {
      test: (text) => {
        charge(pattern, size, text.length);
        // A search that asks for the match's bounds runs RE2's automaton simulation (one-pass,
        // bit-state or NFA), whose work is at most the string's length times the instructions.
        // `test()` tries RE2's lazy DFA first, which on a pattern whose states outgrow its cache
        // builds a new state per character: ≈ 88 ns per unit on short strings, against ≈ 15 here
        // (ADR 0104; linear-regexp.test.ts "never builds RE2's DFA").
        return compiled.matcher(text).find();
      },
      toString: () => `re2:${pattern}`,
    };
    return matcher;
  },
  // Read only by ajv's standalone code generation, which Atrium does not use.
  { code: "linearRegExp" },
);

function charge(pattern: string, instructions: number, length: number): void {
  if (budget.spend((length + 1) * instructions + MATCH_SETUP_UNITS))
    throw new MatchBudgetExceeded(pattern, instructions, length);
}

// re2js types its program `any`; numInst() is the size the matcher's work grows with.
function instructionsOf(compiled: RE2JS): number {
  return (compiled.re2().prog as { numInst(): number }).numInst();
}
