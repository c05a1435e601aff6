import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { BootError } from "../errors.ts";
import { CorruptJson, parseStoredJson } from "../storage/atomic.ts";
import { type CredentialKeysSection, resolveCredentialKeys } from "./credential-keys.ts";
import { type CredentialRef, readCredential } from "./credentials.ts";
import {
  ACCESS_TOKEN_TTL_DEFAULT,
  CLIENT_METADATA_FETCHES_PER_HOUR_DEFAULT,
  type ClaimMapping,
  type ConfigSections,
  DRAIN_SECONDS_DEFAULT,
  IDLE_TIMEOUT_SECONDS_DEFAULT,
  type InstanceConfig,
  MAX_ADMINISTERED_WORKSPACES_DEFAULT,
  MAX_BODY_BYTES_DEFAULT,
  MAX_UNUSED_CLIENTS_DEFAULT,
  MIN_SESSION_SECRET_BYTES,
  PARKED_REQUESTS_PER_HOUR_DEFAULT,
  REFRESH_REUSE_GRACE_SECONDS_DEFAULT,
  REFRESH_TOKEN_TTL_DEFAULT,
  REGISTRATIONS_PER_HOUR_DEFAULT,
  REQUEST_TIMEOUT_SECONDS_DEFAULT,
  SESSION_MAX_AGE_DEFAULT,
  type SessionConfig,
} from "./schema.ts";
import { checkAgainstSchema } from "./schema-check.ts";

const NO_SECTIONS: ConfigSections = {};

export interface Overrides {
  port?: number;
  dataRoot?: string;
  /** The sections the platform apps declare; a top-level key that is none of these is refused. */
  sections?: ConfigSections;
}

/** Reads, validates and resolves instance.json. There is no default file and no default provider. */
export async function loadInstance(path: string, overrides: Overrides = {}): Promise<InstanceConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new BootError(
        `No instance file at ${path}. Copy instance.example.json to instance.json and choose an ` +
          `identity provider in "auth.adapter" (or pass --instance PATH). Atrium never starts without one.`,
      );
    }
    throw new BootError(`Cannot read the instance file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    // A byte order mark is how some Windows editors start a UTF-8 file; it is not JSON's.
    raw = parseStoredJson(path, text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch (error) {
    // Where, never what: V8's own message quotes the text around the fault, and this file may
    // hold a secret inline (test/unit/instance/load.test.ts).
    if (error instanceof CorruptJson) throw new BootError(error.message);
    throw error;
  }
  return parseInstance(raw, { source: path, baseDir: dirname(resolve(path)), ...overrides });
}

export function parseInstance(
  raw: unknown,
  options: Overrides & { source: string; baseDir: string },
): InstanceConfig {
  // Empty is a mistake, never "not given": it would act on the file's own root (the CLI refuses it first).
  if (options.dataRoot === "") throw new BootError("The data root given (--data) is empty: give a folder.");
  const sections = options.sections ?? NO_SECTIONS;
  checkAgainstSchema(raw, sections, options.source);
  const file = raw as unknown as InstanceFile;
  checkPublicUrl(file.http.publicUrl);
  const port = options.port ?? file.http.port;
  const auth = resolveAuth(file.auth, options.baseDir);
  return {
    auth,
    session: resolveSession(file.session, auth.adapter, options.baseDir),
    oauth: {
      accessTokenTtlSeconds: file.oauth?.accessTokenTtlSeconds ?? ACCESS_TOKEN_TTL_DEFAULT,
      refreshTokenTtlSeconds: file.oauth?.refreshTokenTtlSeconds ?? REFRESH_TOKEN_TTL_DEFAULT,
      refreshReuseGraceSeconds: file.oauth?.refreshReuseGraceSeconds ?? REFRESH_REUSE_GRACE_SECONDS_DEFAULT,
      registrationsPerHour: file.oauth?.registrationsPerHour ?? REGISTRATIONS_PER_HOUR_DEFAULT,
      clientMetadataFetchesPerHour:
        file.oauth?.clientMetadataFetchesPerHour ?? CLIENT_METADATA_FETCHES_PER_HOUR_DEFAULT,
      parkedRequestsPerHour: file.oauth?.parkedRequestsPerHour ?? PARKED_REQUESTS_PER_HOUR_DEFAULT,
      maxUnusedClients: file.oauth?.maxUnusedClients ?? MAX_UNUSED_CLIENTS_DEFAULT,
      allowPrivateClientMetadata: file.oauth?.clientMetadataDocuments?.allowPrivateAddresses ?? false,
    },
    // --data is typed at a shell, so it is relative to the working directory; the file's own
    // root is relative to the file, so an instance folder can move as a whole.
    storage: {
      root:
        options.dataRoot === undefined
          ? resolve(options.baseDir, file.storage.root)
          : resolve(options.dataRoot),
      archiveRetentionDays: file.storage.archiveRetentionDays,
    },
    workspaces: {
      maxAdministeredPerPerson:
        file.workspaces?.maxAdministeredPerPerson ?? MAX_ADMINISTERED_WORKSPACES_DEFAULT,
    },
    http: {
      host: file.http.host,
      port,
      publicUrl: stripSlash(new URL(file.http.publicUrl).href),
      maxBodyBytes: file.http.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT,
      drainSeconds: file.http.drainSeconds ?? DRAIN_SECONDS_DEFAULT,
      idleTimeoutSeconds: file.http.idleTimeoutSeconds ?? IDLE_TIMEOUT_SECONDS_DEFAULT,
      requestTimeoutSeconds: file.http.requestTimeoutSeconds ?? REQUEST_TIMEOUT_SECONDS_DEFAULT,
    },
    log: { level: file.log?.level ?? "info" },
    credentials: file.credentials && resolveCredentialKeys(file.credentials, options.baseDir),
    sections: Object.fromEntries(
      Object.keys(sections).flatMap((name) => {
        const section = (raw as Record<string, unknown>)[name];
        return section === undefined ? [] : [[name, section]];
      }),
    ),
    baseDir: options.baseDir,
  };
}

/** instance.json as the schema has already checked it. */
interface InstanceFile {
  auth: AuthFile;
  session?: { secret?: CredentialRef; maxAgeSeconds?: number };
  oauth?: {
    accessTokenTtlSeconds?: number;
    refreshTokenTtlSeconds?: number;
    refreshReuseGraceSeconds?: number;
    registrationsPerHour?: number;
    clientMetadataFetchesPerHour?: number;
    parkedRequestsPerHour?: number;
    maxUnusedClients?: number;
    clientMetadataDocuments?: { allowPrivateAddresses?: boolean };
  };
  storage: { root: string; archiveRetentionDays?: number };
  workspaces?: { maxAdministeredPerPerson?: number };
  http: {
    host: string;
    port: number;
    publicUrl: string;
    maxBodyBytes?: number;
    drainSeconds?: number;
    idleTimeoutSeconds?: number;
    requestTimeoutSeconds?: number;
  };
  log?: { level?: string };
  credentials?: CredentialKeysSection;
}

interface AuthFile {
  adapter: "dev" | "oidc" | "workos";
  issuer?: string;
  authkitDomain?: string;
  clientId?: string;
  clientSecret?: CredentialRef;
  apiKey?: CredentialRef;
  scopes?: string[];
  audience?: string;
  firstPartyClients?: string[];
  claims?: Partial<ClaimMapping>;
  organizationId?: string;
  apiUrl?: string;
}

/** The fields each adapter needs and the ones it takes besides; anything else is refused by name. */
const ADAPTER_FIELDS: Record<AuthFile["adapter"], { required: string[]; optional: string[] }> = {
  dev: { required: [], optional: [] },
  oidc: {
    required: ["issuer", "clientId"],
    optional: ["clientSecret", "scopes", "audience", "firstPartyClients", "claims"],
  },
  workos: {
    required: ["authkitDomain", "clientId", "apiKey"],
    optional: ["scopes", "audience", "firstPartyClients", "claims", "organizationId", "apiUrl"],
  },
};

const WORKOS_API_URL = "https://api.workos.com";

const DEFAULT_SCOPES = ["openid", "profile", "email"];

function resolveAuth(auth: AuthFile, baseDir: string): InstanceConfig["auth"] {
  const fields = ADAPTER_FIELDS[auth.adapter];
  for (const field of Object.keys(auth)) {
    if (field !== "adapter" && !fields.required.includes(field) && !fields.optional.includes(field)) {
      throw new BootError(`auth.${field} does not apply to the "${auth.adapter}" adapter; remove it.`);
    }
  }
  for (const field of fields.required) {
    if (!(field in auth)) {
      throw new BootError(`auth: missing field "${field}" (the "${auth.adapter}" adapter needs it).`);
    }
  }
  if (auth.adapter === "dev") return { adapter: "dev" };

  const clientId = auth.clientId as string;
  const scopes = auth.scopes ?? DEFAULT_SCOPES;
  const common = {
    clientId,
    scopes: scopes.includes("openid") ? scopes : ["openid", ...scopes],
    audience: auth.audience ?? clientId,
    firstPartyClients: auth.firstPartyClients ?? [],
  };
  if (auth.adapter === "workos") {
    if (auth.apiUrl !== undefined && auth.organizationId === undefined) {
      throw new BootError(
        "auth.apiUrl is used only to look up roles in auth.organizationId; set both or neither.",
      );
    }
    // AuthKit is an OpenID provider at the AuthKit domain; the API key is the client secret
    // its token endpoint takes in the form body, and its tokens carry the org role in `role`.
    return {
      adapter: "workos",
      issuer: stripSlash(auth.authkitDomain as string),
      clientSecret: readCredential(auth.apiKey as CredentialRef, "auth.apiKey", baseDir),
      clientAuthMethod: "client_secret_post",
      claims: claimMapping(auth.claims, { orgRole: "role", orgAdminValues: ["admin"] }),
      workosOrganization:
        auth.organizationId === undefined
          ? undefined
          : { organizationId: auth.organizationId, apiUrl: stripSlash(auth.apiUrl ?? WORKOS_API_URL) },
      ...common,
    };
  }
  const clientSecret = auth.clientSecret && readCredential(auth.clientSecret, "auth.clientSecret", baseDir);
  return {
    adapter: "oidc",
    issuer: auth.issuer as string,
    clientSecret,
    clientAuthMethod: clientSecret ? "client_secret_basic" : "none",
    claims: claimMapping(auth.claims, { orgAdminValues: [] }),
    ...common,
  };
}

/**
 * `orgRole` and `orgAdminValues` work only as a pair: a claim with no value that matches, or values
 * with no claim to read them from, make nobody an org admin, and no one would be told why. A half
 * is refused by name unless the adapter's default completes it (`workos`: `role` / `["admin"]`)
 * (test/unit/instance/load.test.ts "auth.claims").
 */
function claimMapping(
  claims: Partial<ClaimMapping> | undefined,
  defaults: { orgRole?: string; orgAdminValues: string[] },
): ClaimMapping {
  const orgRole = claims?.orgRole ?? defaults.orgRole;
  const orgAdminValues = claims?.orgAdminValues ?? defaults.orgAdminValues;
  if (orgRole === undefined && orgAdminValues.length > 0) {
    throw new BootError(
      "auth.claims.orgAdminValues is matched against the claim auth.claims.orgRole names, and that is " +
        'not set: set both (e.g. "orgRole": "groups", "orgAdminValues": ["atrium-admins"]) or neither.',
    );
  }
  if (orgRole !== undefined && orgAdminValues.length === 0) {
    throw new BootError(
      `auth.claims.orgRole ("${orgRole}") makes an org admin only when it holds one of ` +
        'auth.claims.orgAdminValues, and none is given: list them (e.g. "orgAdminValues": ["atrium-admins"]) ' +
        "or remove orgRole.",
    );
  }
  return {
    subject: claims?.subject ?? "sub",
    name: claims?.name ?? "name",
    email: claims?.email ?? "email",
    orgRole,
    orgAdminValues,
  };
}

function resolveSession(
  session: InstanceFile["session"],
  adapter: AuthFile["adapter"],
  baseDir: string,
): SessionConfig {
  const maxAgeSeconds = session?.maxAgeSeconds ?? SESSION_MAX_AGE_DEFAULT;
  if (!session?.secret) {
    // Under dev, Atrium keeps a generated secret in the data root; a real provider's
    // sessions are signed with a secret the operator holds and can rotate.
    if (adapter === "dev") return { secret: undefined, maxAgeSeconds };
    throw new BootError(
      `session.secret is required with the "${adapter}" adapter: name a secret of at least ` +
        `${MIN_SESSION_SECRET_BYTES} bytes, e.g. "session": { "secret": { "env": "ATRIUM_SESSION_SECRET" } } ` +
        "with ATRIUM_SESSION_SECRET=$(openssl rand -base64 48).",
    );
  }
  const secret = readCredential(session.secret, "session.secret", baseDir);
  if (Buffer.byteLength(secret) < MIN_SESSION_SECRET_BYTES) {
    throw new BootError(
      `session.secret is ${Buffer.byteLength(secret)} bytes; it must be at least ${MIN_SESSION_SECRET_BYTES}.`,
    );
  }
  return { secret, maxAgeSeconds };
}

/**
 * The public URL is the origin Atrium serves at its root, and appends its paths to (`/mcp/ws_…`,
 * `/auth/callback`): a query or a fragment would end up before the path, and a user name or
 * password would be handed to every client in every URL. A path was accepted and handed out in
 * every URL, but no route is served under it, and a loopback URL's port is Atrium's own listener,
 * so nothing could stand in front to strip it (ADR 0158). Refused by field; the URL itself is not
 * echoed, as it may hold a password (test/unit/instance/load.test.ts "publicUrl").
 */
function checkPublicUrl(publicUrl: string): void {
  const url = new URL(publicUrl);
  const extra =
    url.username !== "" || url.password !== ""
      ? "a user name or password"
      : url.search !== "" || publicUrl.includes("?")
        ? "a query"
        : url.hash !== "" || publicUrl.includes("#")
          ? "a fragment"
          : url.pathname !== "/"
            ? "a path"
            : undefined;
  if (extra === undefined) return;
  const advice =
    extra === "a path"
      ? "; Atrium serves only at the root of its origin: give it its own host name or port, and " +
        "have a proxy in front pass every path of that origin to it unchanged."
      : "; remove it.";
  throw new BootError(
    `http.publicUrl must be the origin clients reach Atrium at (scheme, host and port, ` +
      `e.g. "https://atrium.example.com"), without ${extra}${advice}`,
  );
}

/**
 * A loopback public URL names the port Atrium itself listens on, so when `--port` (or
 * port 0) moves the listener the URL follows it. A non-loopback URL is a proxy's and is kept.
 */
export function followPort(publicUrl: string, actualPort: number): string {
  const url = new URL(publicUrl);
  if (!isLoopbackHost(url.hostname)) return publicUrl;
  url.port = String(actualPort);
  return stripSlash(url.href);
}

export function isLoopbackHost(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]" || hostname === "::1";
}

function stripSlash(href: string): string {
  return href.endsWith("/") ? href.slice(0, -1) : href;
}
