import type { RegExpEngine, RegExpLike } from "ajv/dist/types/index.js";
import { RE2JS } from "re2js";

// A schema's `pattern` is matched by RE2 (the pure-JavaScript re2js), never by V8's RegExp: V8
// backtracks, and a member's "^(a+)+$" against 35 characters held the event loop for 91 s.
// RE2's time is linear in the string, times the size of the compiled pattern, so that size is
// capped too: past about 2,000 instructions its lazy DFA runs out of cache and falls back to
// simulating the automaton, measured at 40-80 s per MiB for 3,000-4,000 instructions, while at
// 1,000 the worst measured was about 0.25 s per MiB (ADR 0064).
export const MAX_PATTERN_INSTRUCTIONS = 1000;

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
  // re2js types its program `any`; numInst() is the size the matcher's work grows with.
  const size = (compiled.re2().prog as { numInst(): number }).numInst();
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
 */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    const compiled = compileLinear(pattern);
    // ajv keeps one matcher per instance under this string: it must differ between patterns.
    const matcher: RegExpLike & { toString(): string } = {
      test: (text) => compiled.test(text),
      toString: () => `re2:${pattern}`,
    };
    return matcher;
  },
  // Read only by ajv's standalone code generation, which Atrium does not use.
  { code: "linearRegExp" },
);
