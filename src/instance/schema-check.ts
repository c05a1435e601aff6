import { Ajv, type ErrorObject } from "ajv";
import addFormatsModule from "ajv-formats";
import { BootError } from "../errors.ts";
import { type ConfigSections, instanceSchema } from "./schema.ts";

// ajv-formats is CommonJS with a default export; under NodeNext its callable is `.default`.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => void };
// strictRequired is off because auth uses if/then to require provider fields declared one level up.
// Every failure is collected: instance.json is the operator's own file, read once at boot, and a
// refusal names every wrong field at once; a value from a caller or a remote is checked to its
// first failure (json-schema/ajv-pair.ts, ADR 0157).
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
addFormats.default(ajv);

// One compiled validator per set of sections: an instance loads its file once, tests many times.
const validators = new WeakMap<ConfigSections, ReturnType<typeof ajv.compile>>();

/**
 * Checks instance.json, as parsed, against the core schema and the platform apps' `sections`;
 * refuses it at boot naming every field that is wrong and how, `source` being the file.
 */
export function checkAgainstSchema(raw: unknown, sections: ConfigSections, source: string): void {
  const validate = validatorFor(sections);
  if (validate(raw)) return;
  // "must match then/else" only restates the errors beneath it.
  const problems = (validate.errors ?? [])
    .filter((e) => e.keyword !== "if")
    .map(describeError)
    .join("; ");
  throw new BootError(`${source} is invalid: ${problems}`);
}

function validatorFor(sections: ConfigSections): ReturnType<typeof ajv.compile> {
  let validate = validators.get(sections);
  if (!validate) {
    const properties: Record<string, unknown> = { ...instanceSchema.properties };
    for (const [name, section] of Object.entries(sections)) {
      if (name in properties) throw new Error(`A platform app's config section "${name}" is a core one.`);
      properties[name] = section.schema;
    }
    // Without the $id, which ajv would refuse to register twice.
    const { $id: _published, ...schema } = instanceSchema;
    validate = ajv.compile({ ...schema, properties });
    validators.set(sections, validate);
  }
  return validate;
}

function describeError(error: ErrorObject): string {
  const at = error.instancePath === "" ? "(top level)" : error.instancePath.slice(1).replaceAll("/", ".");
  if (error.keyword === "additionalProperties") {
    return `${at}: unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`;
  }
  if (error.keyword === "required") {
    return `${at}: missing field "${(error.params as { missingProperty: string }).missingProperty}"`;
  }
  if (error.keyword === "enum") {
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map((v) =>
      JSON.stringify(v),
    );
    return `${at}: must be one of ${allowed.join(", ")}`;
  }
  return `${at}: ${error.message ?? "is invalid"}`;
}
