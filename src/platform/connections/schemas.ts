import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
  Tool,
} from "@modelcontextprotocol/client";
import type { ValidateFunction } from "ajv";
import { ajvPair } from "../json-schema/ajv-pair.ts";
import { compileAlone } from "../json-schema/compile-alone.ts";
import { endlessLoop } from "../json-schema/endless-refs.ts";
import { compileLinear, UnmatchablePattern } from "../json-schema/linear-regexp.ts";
import { subschemas } from "../json-schema/subschemas.ts";

// Remote servers write their schemas in draft-07 (most generators) or 2020-12 (MCP's default
// dialect); each is compiled by the ajv that speaks it, and checked against its meta-schema.
// Unknown keywords are a server's own business. How the pair is set up: json-schema/ajv-pair.ts.
const { draft07, draft2020 } = ajvPair({ validateSchema: true });

// The copy of a tool's schema that is compiled, per schema the snapshot holds: compiled once.
const enforceable = new WeakMap<object, Record<string, unknown>>();

/**
 * Compiles a tool's input schema once; throws when the schema itself is not one ajv can use, or
 * when checking arguments against it would never end.
 */
export function compileInputSchema(tool: Tool): ValidateFunction {
  return compileToolSchema(tool.inputSchema as Record<string, unknown>, "arguments");
}

/**
 * How the SDK client checks a remote tool's structured result against the tool's output schema:
 * through the same engine as its arguments (RE2 patterns, the patterns RE2 cannot match left out:
 * adr/0064), never the SDK's default ajv, whose RegExp a server's pattern and result could keep
 * backtracking for minutes with every workspace waiting.
 */
export const remoteOutputValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = compileToolSchema(schema as Record<string, unknown>, "results");
    return (input) =>
      validate(input)
        ? { valid: true, data: input as T, errorMessage: undefined }
        : { valid: false, data: undefined, errorMessage: describeSchemaErrors(validate) };
  },
};

function compileToolSchema(raw: Record<string, unknown>, what: "arguments" | "results"): ValidateFunction {
  const schema = enforceablePart(raw);
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  const ajv =
    dialect.includes("draft-07") || dialect.includes("draft-04") || dialect.includes("draft-06")
      ? draft07
      : draft2020;
  const validate = compileAlone(ajv, schema);
  const loop = endlessLoop(schema);
  if (loop) {
    throw new Error(
      `it applies the schema at "${loop}" to the same value again before looking inside it, so checking ${what} would never end`,
    );
  }
  return validate;
}

/**
 * `schema` without the `pattern`s RE2 cannot match (a lookaround, a backreference) or that compile
 * too large: the tool stays callable with those strings unchecked here, as the server checks its
 * own arguments and Atrium's check only refuses early. A `patternProperties` key is not dropped —
 * which properties it covers changes what else applies — so one such key refuses the schema.
 */
function enforceablePart(schema: Record<string, unknown>): Record<string, unknown> {
  const known = enforceable.get(schema);
  if (known) return known;
  const unmatchable = (node: Record<string, unknown>) => {
    if (typeof node.pattern !== "string") return false;
    try {
      compileLinear(node.pattern);
      return false;
    } catch (error) {
      // A pattern that is not ECMA-262 stays, and ajv refuses the schema as it always did.
      return error instanceof UnmatchablePattern;
    }
  };
  let part = schema;
  if (subschemas(schema).some(({ node }) => unmatchable(node))) {
    part = structuredClone(schema);
    for (const { node } of subschemas(part)) if (unmatchable(node)) delete node.pattern;
  }
  enforceable.set(schema, part);
  return part;
}

/**
 * An ajv error list in a few words a model can act on. Each names the place in the schema, not
 * in the arguments: an argument's own keys and values are never echoed, so the words are safe
 * for the audit ledger too (ADR 0037).
 */
export function describeSchemaErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 5)
    .map((error) => `${error.schemaPath} ${error.message ?? "is invalid"}`)
    .join("; ");
}
