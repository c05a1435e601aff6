import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { chargeAlternatives } from "./alternative-budget.ts";
import { checkFormats } from "./formats.ts";
import { linearRegExp } from "./linear-regexp.ts";
import { checkUniqueItemsLinearly } from "./unique-items.ts";

/** `multipleOf` compared to this many decimal places: in binary floating point 0.3 / 0.1 is not whole. */
const MULTIPLE_OF_DECIMALS = 9;

/**
 * The two ajv instances a schema someone else wrote is compiled by: draft-07 (most generators)
 * and 2020-12 (MCP's dialect). strict is off, so an annotation keyword a generator adds is not
 * refused. Patterns are matched by RE2 (ADR 0064); formats are checked; `uniqueItems` is checked
 * in linear time. A `$ref` is compiled once and called, never inlined where it is named: 200
 * `$ref`s to one definition of 200 properties (9 KB of JSON) compiled to 12 MB of code in 4–10 s
 * on the event loop, and 40 KB ran the process out of memory (ADR 0085). `multipleOf: 0.1` takes
 * 0.3. A check stops at its first failure (ajv's default, `allErrors` off): the values checked
 * are a caller's or a remote's, and collecting every failure made one error object per item of a
 * 2-million-item array (an `anyOf` of 40 branches, 41 per item), enough to run the process out
 * of heap from one request (ADR 0157). Each branch of an anyOf or a oneOf and each item a
 * `contains` tries is charged to the check's budget of alternatives, as ajv still makes an error
 * object for each one that fails (ADR 0157). `extra` adds options (connections validate a schema
 * against its meta-schema).
 */
export function ajvPair(extra: { validateSchema?: boolean } = {}): { draft07: Ajv; draft2020: Ajv2020 } {
  const options = {
    strict: false,
    inlineRefs: false,
    multipleOfPrecision: MULTIPLE_OF_DECIMALS,
    code: { regExp: linearRegExp },
    ...extra,
  };
  const draft07 = new Ajv(options);
  const draft2020 = new Ajv2020(options);
  for (const ajv of [draft07, draft2020]) {
    checkFormats(ajv);
    checkUniqueItemsLinearly(ajv);
    chargeAlternatives(ajv);
  }
  return { draft07, draft2020 };
}
