import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { InvalidInput } from "../../errors.ts";
import { compileAlone } from "../json-schema/compile-alone.ts";
import { endlessLoop } from "../json-schema/endless-refs.ts";
import { checkFormats } from "../json-schema/formats.ts";
import { linearRegExp } from "../json-schema/linear-regexp.ts";
import { checkUniqueItemsLinearly } from "../json-schema/unique-items.ts";

const MULTIPLE_OF_DECIMALS = 9;

// A task's input and output schemas are written by its author in JSON Schema: 2020-12 (MCP's
// dialect) unless `$schema` names draft-07. strict is off so an annotation keyword a generator
// adds is not refused; a schema ajv cannot compile is refused when the task is defined, not
// when it first runs. Its patterns are matched by RE2, and one RE2 cannot match is refused
// here too (ADR 0064); its formats are checked. A `$ref` is compiled once, as a function of its
// own, never inlined at each place that names it: inlined, 200 `$ref`s to one definition of 200
// properties (9 KB of JSON) compiled to 12 MB of code in 4 s on the event loop, and 40 KB ran
// the process out of memory (ADR 0085; schemas.test.ts "compiles each $ref once").
// `multipleOf` is compared to 9 decimal places: in binary floating point 0.3 / 0.1 is not whole,
// and `multipleOf: 0.1` refused 0.3 (schemas.test.ts "a decimal multipleOf").
const options = {
  strict: false,
  allErrors: true,
  inlineRefs: false,
  multipleOfPrecision: MULTIPLE_OF_DECIMALS,
  code: { regExp: linearRegExp },
};
const draft07 = new Ajv(options);
const draft2020 = new Ajv2020(options);
for (const ajv of [draft07, draft2020]) {
  checkFormats(ajv);
  checkUniqueItemsLinearly(ajv);
}
const compiled = new WeakMap<object, ValidateFunction>();
const MAX_ERRORS = 10;

/** The validator of `schema`; `InvalidInput` naming `field` when it is not a usable JSON Schema. */
export function compileSchema(field: string, schema: Record<string, unknown>): ValidateFunction {
  const known = compiled.get(schema);
  if (known) return known;
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  let validate: ValidateFunction;
  try {
    validate = compileAlone(dialect.includes("draft-07") ? draft07 : draft2020, schema);
  } catch (error) {
    // A schema that refers to itself without end can overflow ajv's own stack before the check
    // below names it; a keyword of the wrong type can fail inside ajv as a TypeError. Neither
    // message is the operator's to read ("id.replace is not a function").
    if (error instanceof RangeError) throw endlessRefs(field, endlessLoopOf(schema) ?? "the root");
    const why =
      error instanceof TypeError
        ? "one of its keywords has a value of the wrong type (a $id or $ref that is not a string, say)"
        : (error as Error).message;
    throw new InvalidInput(`"${field}" is not a JSON Schema Atrium can use: ${why}`);
  }
  const loop = endlessLoop(schema);
  if (loop) throw endlessRefs(field, loop);
  compiled.set(schema, validate);
  return validate;
}

/** What is wrong with `value` by `validate`, one line per problem, each naming where; none: valid. */
export function schemaErrors(validate: ValidateFunction, value: unknown): string[] {
  let valid: boolean;
  try {
    valid = validate(value) as boolean;
  } catch (error) {
    // Each level of the value is a call: one nested deeply enough runs out of stack, in a
    // recursive schema; answered as a problem with the value, not a 500.
    if (!(error instanceof RangeError)) throw error;
    return [`(the value) could not be checked: ${error.message}; it is nested too deeply`];
  }
  if (valid) return [];
  return (validate.errors ?? [])
    .slice(0, MAX_ERRORS)
    .map((error) => `${error.instancePath || "(the value)"} ${error.message ?? "is invalid"}`);
}

function endlessRefs(field: string, loop: string): InvalidInput {
  return new InvalidInput(
    `"${field}" applies the schema at "${loop}" to the same value again before looking inside it ($ref, allOf, anyOf, oneOf, not, if/then/else), so checking a value would never end; make each $ref that leads back go through a keyword that reads a part of the value (properties, items).`,
  );
}

/** `endlessLoop` of a schema ajv could not compile, or nothing when it cannot tell. */
function endlessLoopOf(schema: Record<string, unknown>): string | undefined {
  try {
    return endlessLoop(schema);
  } catch {
    return undefined;
  }
}
