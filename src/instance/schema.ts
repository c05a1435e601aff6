import type { SealKeyRing } from "../crypto/seal.ts";

// The JSON Schema of instance.json. Every field an operator can set is here, with its
// bounds; the loader refuses anything else by naming the field.

export const MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024;
/** How long a graceful stop lets in-flight requests finish before cutting them off. */
export const DRAIN_SECONDS_DEFAULT = 10;
export const MAX_DRAIN_SECONDS = 600;
/**
 * How long a connection may move no bytes either way while a request is open on it. Past the
 * longest silence a request has here (a remote tool call without progress: 60 s) with room to
 * spare; a client that stops reading its answer is cut off after it, not held for good.
 */
export const IDLE_TIMEOUT_SECONDS_DEFAULT = 120;
export const MAX_IDLE_TIMEOUT_SECONDS = 3600;
/** Node's own default, made Atrium's and a setting: a request's body must be whole within it. */
export const REQUEST_TIMEOUT_SECONDS_DEFAULT = 300;
export const MAX_REQUEST_TIMEOUT_SECONDS = 86_400;
export const SESSION_MAX_AGE_DEFAULT = 12 * 60 * 60;
export const ACCESS_TOKEN_TTL_DEFAULT = 15 * 60;
/** The longest `oauth.accessTokenTtlSeconds` allowed: what a grant that recorded no token expiry is judged by. */
export const MAX_ACCESS_TOKEN_TTL_SECONDS = 86_400;
export const REFRESH_TOKEN_TTL_DEFAULT = 30 * 24 * 60 * 60;
/**
 * How long after a rotation the refresh token it replaced is answered with its successor rather
 * than taken for theft (ADR 0136): enough for two refreshes sent at once, or one retried after its
 * answer was lost; a thief with the old token gains the same window, so it stays short.
 */
export const REFRESH_REUSE_GRACE_SECONDS_DEFAULT = 30;
export const MAX_REFRESH_REUSE_GRACE_SECONDS = 60;
export const REGISTRATIONS_PER_HOUR_DEFAULT = 100;
/** Per connecting address and hour, so that one caller cannot take every place (ADR 0073). */
export const PARKED_REQUESTS_PER_HOUR_DEFAULT = 30;
export const CLIENT_METADATA_FETCHES_PER_HOUR_DEFAULT = 100;
/**
 * Registered clients holding no live grant kept at once (ADR 0156). A record is at most the 64 KiB
 * a registration may send, so the folder stays under ≈ 640 MiB however many addresses flood it;
 * a client that gets a grant no longer counts.
 */
export const MAX_UNUSED_CLIENTS_DEFAULT = 10_000;
/** More key versions than this is a rotation that never finished: reseal and drop the old ones. */
export const MAX_CREDENTIAL_KEYS = 16;
/** A hundred years: a longer retention is keeping archived workspaces for good; leave the field out. */
export const MAX_ARCHIVE_RETENTION_DAYS = 36_500;
/**
 * How many workspaces a person may administer and still create another (ADR 0141): far above any
 * person's real use, so an upgrade refuses no one; an instance open to people it does not trust
 * lowers it.
 */
export const MAX_ADMINISTERED_WORKSPACES_DEFAULT = 1_000;
/** Past this a per-person bound bounds nothing a disk or heap would notice (≈ 5 KB of heap each). */
export const MAX_ADMINISTERED_WORKSPACES_CEILING = 100_000;
/** A session secret shorter than this is refused: it signs every browser's cookie. */
export const MIN_SESSION_SECRET_BYTES = 32;

export const instanceSchema = {
  $id: "https://atrium.dev/schemas/instance.json",
  type: "object",
  additionalProperties: false,
  required: ["auth", "storage", "http"],
  $defs: {
    // A secret is never written in instance.json itself: it is named, and read at boot.
    credentialRef: {
      type: "object",
      additionalProperties: false,
      minProperties: 1,
      maxProperties: 1,
      properties: {
        env: { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
        file: { type: "string", minLength: 1 },
      },
    },
  },
  properties: {
    $schema: { type: "string" },
    auth: {
      type: "object",
      additionalProperties: false,
      required: ["adapter"],
      // Which fields each adapter takes is checked in load.ts, which can name the adapter.
      properties: {
        adapter: { enum: ["dev", "oidc", "workos"], description: "The identity provider." },
        issuer: { type: "string", format: "uri", pattern: "^https?://" },
        authkitDomain: { type: "string", format: "uri", pattern: "^https?://" },
        organizationId: { type: "string", pattern: "^org_[A-Za-z0-9]+$" },
        apiUrl: { type: "string", format: "uri", pattern: "^https?://" },
        clientId: { type: "string", minLength: 1 },
        clientSecret: { $ref: "#/$defs/credentialRef" },
        apiKey: { $ref: "#/$defs/credentialRef" },
        scopes: { type: "array", items: { type: "string", pattern: "^[!#-\\[\\]-~]+$" }, minItems: 1 },
        audience: { type: "string", minLength: 1 },
        firstPartyClients: { type: "array", items: { type: "string", minLength: 1 } },
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
    },
    session: {
      type: "object",
      additionalProperties: false,
      properties: {
        secret: { $ref: "#/$defs/credentialRef" },
        maxAgeSeconds: { type: "integer", minimum: 60, maximum: 2_592_000 },
      },
    },
    oauth: {
      type: "object",
      additionalProperties: false,
      properties: {
        accessTokenTtlSeconds: { type: "integer", minimum: 30, maximum: MAX_ACCESS_TOKEN_TTL_SECONDS },
        refreshTokenTtlSeconds: { type: "integer", minimum: 300, maximum: 31_536_000 },
        refreshReuseGraceSeconds: { type: "integer", minimum: 0, maximum: MAX_REFRESH_REUSE_GRACE_SECONDS },
        registrationsPerHour: { type: "integer", minimum: 1 },
        clientMetadataFetchesPerHour: { type: "integer", minimum: 1 },
        parkedRequestsPerHour: { type: "integer", minimum: 1 },
        maxUnusedClients: { type: "integer", minimum: 1 },
        clientMetadataDocuments: {
          type: "object",
          additionalProperties: false,
          properties: { allowPrivateAddresses: { type: "boolean" } },
        },
      },
    },
    storage: {
      type: "object",
      additionalProperties: false,
      required: ["root"],
      properties: {
        root: { type: "string", minLength: 1 },
        archiveRetentionDays: { type: "integer", minimum: 1, maximum: MAX_ARCHIVE_RETENTION_DAYS },
      },
    },
    workspaces: {
      type: "object",
      additionalProperties: false,
      properties: {
        // At least 1: a person who administers none may always create their first (GET /v1/bootstrap).
        maxAdministeredPerPerson: {
          type: "integer",
          minimum: 1,
          maximum: MAX_ADMINISTERED_WORKSPACES_CEILING,
        },
      },
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
        drainSeconds: { type: "integer", minimum: 0, maximum: MAX_DRAIN_SECONDS },
        idleTimeoutSeconds: { type: "integer", minimum: 1, maximum: MAX_IDLE_TIMEOUT_SECONDS },
        requestTimeoutSeconds: { type: "integer", minimum: 1, maximum: MAX_REQUEST_TIMEOUT_SECONDS },
      },
    },
    credentials: {
      type: "object",
      additionalProperties: false,
      required: ["keys"],
      properties: {
        // The keys that seal stored credentials (ADR 0036); the highest version seals new values.
        // Whether each value is a key, and versions are unique, is checked in credential-keys.ts.
        keys: {
          type: "array",
          minItems: 1,
          maxItems: MAX_CREDENTIAL_KEYS,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["version", "key"],
            properties: {
              version: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
              key: { $ref: "#/$defs/credentialRef" },
            },
          },
        },
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

/** How Atrium authenticates itself at the provider's token endpoint. */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

/**
 * An external OpenID provider: `oidc` as configured, or `workos` (AuthKit's OIDC-compatible
 * endpoints) resolved to the same shape. Secrets are the values read through their references.
 */
export interface OidcAuth {
  adapter: "oidc" | "workos";
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  clientAuthMethod: ClientAuthMethod;
  /** Scopes asked for at browser sign-in; always includes `openid`. */
  scopes: string[];
  /** The `aud` Atrium accepts on provider tokens; the client id when not set. */
  audience: string;
  claims: ClaimMapping;
  /** Provider client ids whose tokens /mcp/ws_… accepts directly (REST accepts any). */
  firstPartyClients: string[];
  /**
   * `workos` with `organizationId`: at sign-in the org role is the person's membership role
   * in that organization, asked of the WorkOS API with the API key.
   */
  workosOrganization?: { organizationId: string; apiUrl: string } | undefined;
}

export interface SessionConfig {
  /** The cookie-signing secret; `undefined` only under `dev`, where one is kept in the data root. */
  secret: string | undefined;
  maxAgeSeconds: number;
}

export interface OAuthConfig {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /** How long a just-replaced refresh token from its own client gets its successor again (ADR 0136); 0 never. */
  refreshReuseGraceSeconds: number;
  /** Dynamic client registrations accepted per connecting address per hour. */
  registrationsPerHour: number;
  /** Client metadata documents fetched on behalf of one connecting address per hour. */
  clientMetadataFetchesPerHour: number;
  /** Authorization requests too long for sign-in's `return_to` parked per connecting address per hour. */
  parkedRequestsPerHour: number;
  /** Registered clients holding no live grant kept at once; past it registration is `503` (ADR 0156). */
  maxUnusedClients: number;
  /** Lets a client metadata document live at a loopback or private address (local development). */
  allowPrivateClientMetadata: boolean;
}

export interface InstanceConfig {
  auth: DevAuth | OidcAuth;
  session: SessionConfig;
  oauth: OAuthConfig;
  /**
   * `archiveRetentionDays`: how long an archived workspace is kept before housekeeping removes it
   * (ADR 0113); undefined keeps every archived workspace until an operator removes it.
   */
  storage: { root: string; archiveRetentionDays: number | undefined };
  /**
   * `maxAdministeredPerPerson`: a create is refused while its creator administers this many live
   * workspaces (ADR 0141).
   */
  workspaces: { maxAdministeredPerPerson: number };
  http: {
    host: string;
    port: number;
    publicUrl: string;
    maxBodyBytes: number;
    drainSeconds: number;
    idleTimeoutSeconds: number;
    requestTimeoutSeconds: number;
  };
  log: { level: string };
  /**
   * The keys that seal stored credentials (connections' secrets), by version, read through their
   * references at boot; `undefined` when instance.json has no `credentials` section.
   */
  credentials: SealKeyRing | undefined;
  /**
   * Each platform app's own section of instance.json (`files`, `skills`, …), as the schema the app
   * declared has checked it; absent when the file leaves it out. The app resolves its defaults.
   */
  sections: Readonly<Record<string, unknown>>;
  /** The folder instance.json is in: a relative path inside an app's section is relative to it. */
  baseDir: string;
}

/**
 * A top-level section of instance.json that a platform app owns: its JSON Schema (validated with
 * the rest of the file, so a mistake is refused at boot by field name) and how the app turns the
 * checked section, or its absence, into its settings.
 */
export interface ConfigSection<Settings> {
  schema: Record<string, unknown>;
  resolve(section: unknown, where: { baseDir: string }): Settings;
}

/** The platform apps' sections of instance.json, by section name (the app's name). */
export type ConfigSections = Readonly<Record<string, ConfigSection<unknown>>>;
