import type { Ajv, ValidateFunction } from "ajv";
import { withinAlternativeBudget } from "./alternative-budget.ts";
import { withinMatchBudget } from "./linear-regexp.ts";

/** The most errors a validator keeps from one call: enough to say what was wrong and where. */
export const MAX_KEPT_ERRORS = 10;

/**
 * `schema` compiled by `ajv` and then forgotten by it. ajv keeps every schema it compiles and
 * files its `$id`s for every later schema's `$ref`: one member's schema would be reachable from
 * another's, a second schema with the same `$id` refused ("already exists"), and each schema
 * ever defined kept in memory for the life of the process. What the compile filed is removed
 * again; the validator keeps what it needs. The compile (which checks the schema against its
 * meta-schema) and each call of the validator have one pattern-match budget (ADR 0104) and one
 * budget of alternatives tried (ADR 0157) each, so no validation of caller-sized input holds the
 * event loop long: a call past one throws its `CheckTooCostly`.
 */
export function compileAlone(
  ajv: Pick<Ajv, "compile" | "removeSchema" | "refs" | "schemas">,
  schema: Record<string, unknown>,
): ValidateFunction {
  // ajv files a root $id as written, less a trailing "#" (its normalizeId).
  const id = typeof schema.$id === "string" ? schema.$id.replace(/#\/?$/, "") : "";
  if (id && (id in ajv.refs || id in ajv.schemas)) {
    // Only a dialect's own meta-schemas stay filed; removing the schema would remove one of them.
    throw new Error(
      `its $id "${id}" is a JSON Schema meta-schema's; give the schema an $id of its own, or none`,
    );
  }
  const refs = new Set(Object.keys(ajv.refs));
  const schemas = new Set(Object.keys(ajv.schemas));
  try {
    const validate = withinBudgets(() => ajv.compile(schema));
    // An `$async` schema compiles to a validator that answers a promise, which every caller would
    // read as true, and whose pattern checks would run after the match budget ended.
    if ((validate as { $async?: unknown }).$async) {
      throw new Error(
        "it is an asynchronous schema ($async: true), which Atrium does not run: remove $async from it and from every schema it references",
      );
    }
    return withinEachBudget(validate);
  } finally {
    ajv.removeSchema(schema);
    for (const key of Object.keys(ajv.refs)) if (!refs.has(key)) delete ajv.refs[key];
    for (const key of Object.keys(ajv.schemas)) if (!schemas.has(key)) delete ajv.schemas[key];
  }
}

/**
 * `validate`, each call of it within a budget of its own; its `errors` are the last call's first
 * MAX_KEPT_ERRORS. ajv leaves a call's errors on the compiled validator until its next call: a
 * copy of a few is kept instead, so what one refused value made is not held for the life of the
 * schema (test/unit/platform/json-schema/compile-alone.test.ts "keeps a few errors").
 */
function withinEachBudget(validate: ValidateFunction): ValidateFunction {
  const budgeted = ((value: unknown) => {
    budgeted.errors = null;
    try {
      const valid = withinBudgets(() => validate(value) === true);
      if (!valid) budgeted.errors = validate.errors?.slice(0, MAX_KEPT_ERRORS) ?? [];
      return valid;
    } finally {
      validate.errors = null;
    }
  }) as ValidateFunction;
  budgeted.schema = validate.schema;
  budgeted.schemaEnv = validate.schemaEnv;
  return budgeted;
}

function withinBudgets<T>(check: () => T): T {
  return withinMatchBudget(() => withinAlternativeBudget(check));
}
