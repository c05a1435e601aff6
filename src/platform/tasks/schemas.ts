import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { InvalidInput } from "../../errors.ts";
import { linearRegExp } from "../json-schema/linear-regexp.ts";

// A task's input and output schemas are written by its author in JSON Schema: 2020-12 (MCP's
// dialect) unless `$schema` names draft-07. strict is off so an annotation keyword a generator
// adds is not refused; a schema ajv cannot compile is refused when the task is defined, not
// when it first runs. Its patterns are matched by RE2, and one RE2 cannot match is refused
// here too (ADR 0064).
const options = { strict: false, allErrors: true, code: { regExp: linearRegExp } };
const draft07 = new Ajv(options);
const draft2020 = new Ajv2020(options);
const compiled = new WeakMap<object, ValidateFunction>();
const MAX_ERRORS = 10;

/** The validator of `schema`; `InvalidInput` naming `field` when it is not a usable JSON Schema. */
export function compileSchema(field: string, schema: Record<string, unknown>): ValidateFunction {
  const known = compiled.get(schema);
  if (known) return known;
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  let validate: ValidateFunction;
  try {
    validate = (dialect.includes("draft-07") ? draft07 : draft2020).compile(schema);
  } catch (error) {
    throw new InvalidInput(`"${field}" is not a JSON Schema Atrium can use: ${(error as Error).message}`);
  }
  compiled.set(schema, validate);
  return validate;
}

/** What is wrong with `value` by `validate`, one line per problem, each naming where; none: valid. */
export function schemaErrors(validate: ValidateFunction, value: unknown): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? [])
    .slice(0, MAX_ERRORS)
    .map((error) => `${error.instancePath || "(the value)"} ${error.message ?? "is invalid"}`);
}
