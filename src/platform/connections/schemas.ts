import type { Tool } from "@modelcontextprotocol/client";
import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS with a default export; under NodeNext its callable is `.default`.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv | Ajv2020) => void };

// Remote servers write their schemas in draft-07 (most generators) or 2020-12 (MCP's default
// dialect); each is compiled by the ajv that speaks it. Unknown keywords are a server's own
// business, so strict mode is off; formats are checked.
const draft07 = new Ajv({ strict: false, allErrors: true, validateSchema: true });
const draft2020 = new Ajv2020({ strict: false, allErrors: true, validateSchema: true });
addFormats.default(draft07);
addFormats.default(draft2020);

/** Compiles a tool's input schema once; throws when the schema itself is not one ajv can use. */
export function compileInputSchema(tool: Tool): ValidateFunction {
  const schema = tool.inputSchema as Record<string, unknown>;
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  const ajv =
    dialect.includes("draft-07") || dialect.includes("draft-04") || dialect.includes("draft-06")
      ? draft07
      : draft2020;
  return ajv.compile(schema);
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
