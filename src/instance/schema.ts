// The JSON Schema of instance.json. Every field an operator can set is here, with its
// bounds; the loader refuses anything else by naming the field.

export const MAX_UPLOAD_BYTES_DEFAULT = 50 * 1024 * 1024;
export const MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024;
export const MAX_INSTRUCTIONS_BYTES_DEFAULT = 32 * 1024;
/** Below this the preamble and the truncation note alone would not fit. */
export const MIN_INSTRUCTIONS_BYTES = 1024;

export const instanceSchema = {
  $id: "https://atrium.dev/schemas/instance.json",
  type: "object",
  additionalProperties: false,
  required: ["auth", "storage", "http"],
  properties: {
    $schema: { type: "string" },
    auth: {
      type: "object",
      additionalProperties: false,
      required: ["adapter"],
      properties: {
        adapter: { enum: ["dev"], description: "The identity provider. This build ships `dev`." },
      },
    },
    storage: {
      type: "object",
      additionalProperties: false,
      required: ["root"],
      properties: { root: { type: "string", minLength: 1 } },
    },
    http: {
      type: "object",
      additionalProperties: false,
      required: ["host", "port", "publicUrl"],
      properties: {
        host: { type: "string", minLength: 1 },
        port: { type: "integer", minimum: 0, maximum: 65535 },
        publicUrl: { type: "string", format: "uri", pattern: "^https?://" },
        maxBodyBytes: { type: "integer", minimum: 1024 },
      },
    },
    files: {
      type: "object",
      additionalProperties: false,
      properties: { maxUploadBytes: { type: "integer", minimum: 1 } },
    },
    skills: {
      type: "object",
      additionalProperties: false,
      properties: {
        orgDir: {
          type: "string",
          minLength: 1,
          description: "Folder of org-scope skills, relative to this file.",
        },
        maxInstructionsBytes: { type: "integer", minimum: MIN_INSTRUCTIONS_BYTES },
      },
    },
    log: {
      type: "object",
      additionalProperties: false,
      properties: { level: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] } },
    },
  },
} as const;

export interface InstanceConfig {
  auth: { adapter: "dev" };
  storage: { root: string };
  http: { host: string; port: number; publicUrl: string; maxBodyBytes: number };
  files: { maxUploadBytes: number };
  skills: { orgDir: string | undefined; maxInstructionsBytes: number };
  log: { level: string };
}
