import type { ValidateFunction } from "ajv";
import { InvalidInput } from "../../errors.ts";
import { ajvPair } from "../json-schema/ajv-pair.ts";
import { compileAlone } from "../json-schema/compile-alone.ts";
import { endlessLoop } from "../json-schema/endless-refs.ts";

// A task's input and output schemas are written by its author in JSON Schema: 2020-12 (MCP's
// dialect) unless `$schema` names draft-07. A schema ajv cannot compile is refused when the task
// is defined, not when it first runs, and so is a pattern RE2 cannot match (ADR 0064). How the
// pair is set up, and why: json-schema/ajv-pair.ts (schemas.test.ts "compiles each $ref once",
// "a decimal multipleOf").
const { draft07, draft2020 } = ajvPair();
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
