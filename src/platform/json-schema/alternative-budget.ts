import type { Ajv, CodeKeywordDefinition, KeywordCxt } from "ajv";
import { _ } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { CheckBudget } from "./check-budget.ts";
import { CheckTooCostly } from "./check-too-costly.ts";

// An alternative is a subschema whose failure does not fail the check: a branch of an anyOf or a
// oneOf, an item a `contains` tries. ajv makes an error object for each one that fails, even with
// allErrors off, and drops them once the keyword passes; 2020-12 tries every branch of a union
// (to know what it evaluated). 699,047 items against an anyOf of 40 `const`s (a 2 MiB body) made
// 28 million such errors, 2-4 s of held event loop; 2 million items against a `contains` that only
// the last matched, 1.5-2.8 s. One check may try at most this many: on a 2-core machine under
// load, a freshly compiled schema of those shapes was refused at the limit in 17-84 ms (ADR 0157).
export const MAX_ALTERNATIVES_TRIED = 250_000;

// The keywords that try alternatives, each through KeywordCxt.subschema once per try.
const TRYING_KEYWORDS = ["anyOf", "oneOf", "contains"] as const;

/** A check that would try more than MAX_ALTERNATIVES_TRIED alternatives; stopped before that one. */
export class AlternativeBudgetExceeded extends CheckTooCostly {
  constructor(readonly schemaPath: string) {
    super(
      `checking it would try more than the ${MAX_ALTERNATIVES_TRIED.toLocaleString("en-US")} alternatives one check may try (a branch of an anyOf or a oneOf, an item a contains tries, counted each time one applies: once per item of an array); the ${schemaPath.split("/").pop()} at "${schemaPath}" went past it: send fewer items, or make the schema try fewer (an enum instead of an anyOf of consts, a type list instead of an anyOf of types, a maxItems)`,
    );
    this.name = "AlternativeBudgetExceeded";
  }
}

const budget = new CheckBudget(
  MAX_ALTERNATIVES_TRIED,
  "a schema's alternative was tried outside withinAlternativeBudget: run every validation of a schema Atrium did not write inside one (ADR 0157)",
);

/**
 * Runs `check` — one validation, or a compile that checks a schema against its meta-schema — with
 * MAX_ALTERNATIVES_TRIED to try; the try past it throws AlternativeBudgetExceeded out of `check`
 * before it runs. Inside another, it spends the outer one's budget.
 */
export function withinAlternativeBudget<T>(check: () => T): T {
  return budget.within(check);
}

/**
 * Makes every anyOf, oneOf and contains `ajv` compiles charge each alternative it tries, just
 * before trying it. ajv's own code for each keyword is kept (its order among keywords, its
 * errors, what it marks evaluated); only its calls of `subschema` are preceded by a charge.
 */
export function chargeAlternatives(ajv: Ajv | Ajv2020): void {
  for (const keyword of TRYING_KEYWORDS) {
    // The definition is this instance's own copy (ajv's addRule spreads it).
    const definition = ajv.getKeyword(keyword) as CodeKeywordDefinition;
    const generate = definition.code;
    definition.code = (cxt: KeywordCxt, ruleType?: string) => {
      const tryFunction = cxt.gen.scopeValue("func", { ref: charge, code: _`chargeAlternative` });
      const at = `${cxt.it.errSchemaPath}/${keyword}`;
      const trySubschema = cxt.subschema.bind(cxt);
      // An own property shadows KeywordCxt's method for this keyword's code generation only.
      cxt.subschema = (applicator, valid) => {
        cxt.gen.code(_`${tryFunction}(${at})`);
        return trySubschema(applicator, valid);
      };
      try {
        generate(cxt, ruleType);
      } finally {
        delete (cxt as { subschema?: unknown }).subschema;
      }
    };
  }
}

function charge(schemaPath: string): void {
  if (budget.spend(1)) throw new AlternativeBudgetExceeded(schemaPath);
}
