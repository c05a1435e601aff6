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
        adapter: { enum: ["dev", "oidc"], description: "The identity provider." },
        issuer: { type: "string", format: "uri", pattern: "^https?://" },
        audience: { type: "string", minLength: 1 },
        clientId: { type: "string", minLength: 1 },
        claims: {
          type: "object",
          additionalProperties: false,
          properties: {
            subject: { type: "string", minLength: 1 },
            name: { type: "string", minLength: 1 },
            email: { type: "string", minLength: 1 },
            orgRole: { type: "string", minLength: 1 },
            orgAdminValues: { type: "array", items: { type: "string" } },
          },
        },
      },
      // An OpenID provider is named by its issuer, and its tokens are for this instance's client.
      if: { properties: { adapter: { const: "oidc" } } },
      then: { required: ["issuer", "clientId"] },
      else: {
        not: {
          anyOf: [
            { required: ["issuer"] },
            { required: ["clientId"] },
            { required: ["audience"] },
            { required: ["claims"] },
          ],
        },
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

export interface DevAuth {
  adapter: "dev";
}

/** Which token claims carry the principal's parts; defaults are the OpenID standard ones. */
export interface ClaimMapping {
  subject: string;
  name: string;
  email: string;
  /** A claim whose value (or one of whose values) in `orgAdminValues` makes an org admin. */
  orgRole?: string | undefined;
  orgAdminValues: string[];
}

export interface OidcAuth {
  adapter: "oidc";
  issuer: string;
  clientId: string;
  /** The `aud` Atrium accepts on provider tokens; the client id when not set. */
  audience: string;
  claims: ClaimMapping;
}

export interface InstanceConfig {
  auth: DevAuth | OidcAuth;
  storage: { root: string };
  http: { host: string; port: number; publicUrl: string; maxBodyBytes: number };
  files: { maxUploadBytes: number };
  skills: { orgDir: string | undefined; maxInstructionsBytes: number };
  log: { level: string };
}
