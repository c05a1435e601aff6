import { Ajv } from "ajv";
import { TOOL_NAME_SEPARATOR } from "../../sources/tool-names.ts";
import { compileAlone } from "../json-schema/compile-alone.ts";

// Atrium's own settings in a SKILL.md live in one nested block, `metadata.atrium`; the rest
// of the file is the Agent Skills standard, unmodified. `vendored` is absent on purpose: a
// file cannot claim it.
export const atriumMetadataSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    loading: { enum: ["always", "dynamic"] },
    provenance: { enum: ["chat", "admin", "connector", "import"] },
    tools: {
      type: "array",
      maxItems: 64,
      items: {
        type: "string",
        pattern: `^[a-z][a-z0-9-]{0,39}${TOOL_NAME_SEPARATOR}(\\*|[A-Za-z0-9_.-]{1,128})$`,
      },
    },
  },
} as const;

export interface AtriumMetadata {
  loading?: "always" | "dynamic";
  provenance?: "chat" | "admin" | "connector" | "import";
  tools?: string[];
}

/**
 * Checks a SKILL.md's `metadata.atrium` block. It stops at the first failure (ajv's default, not
 * `allErrors`) and keeps at most a few errors once answered (compileAlone), as every other check
 * of a value does (adr/0157): parseSkill names only the first, and 64 wrong `tools` entries made
 * 64 error objects, held on the validator until the next skill was parsed.
 */
export const validateAtriumMetadata = compileAlone(new Ajv({ strict: true }), atriumMetadataSchema);
