import { Ajv } from "ajv";
import { TOOL_NAME_SEPARATOR } from "../../sources/tool-names.ts";

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

const ajv = new Ajv({ allErrors: true, strict: true });
export const validateAtriumMetadata = ajv.compile<AtriumMetadata>(atriumMetadataSchema);
