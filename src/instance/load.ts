import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { Ajv, type ErrorObject } from "ajv";
import addFormatsModule from "ajv-formats";
import { BootError } from "../errors.ts";
import {
  type ClaimMapping,
  type InstanceConfig,
  instanceSchema,
  MAX_BODY_BYTES_DEFAULT,
  MAX_INSTRUCTIONS_BYTES_DEFAULT,
  MAX_UPLOAD_BYTES_DEFAULT,
} from "./schema.ts";

// ajv-formats is CommonJS with a default export; under NodeNext its callable is `.default`.
const addFormats = addFormatsModule as unknown as { default: (ajv: Ajv) => void };
// strictRequired is off because auth uses if/then to require provider fields declared one level up.
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
addFormats.default(ajv);
const validate = ajv.compile(instanceSchema);

export interface Overrides {
  port?: number;
  dataRoot?: string;
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
    raw = JSON.parse(text);
  } catch (error) {
    throw new BootError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parseInstance(raw, { source: path, baseDir: dirname(resolve(path)), ...overrides });
}

export function parseInstance(
  raw: unknown,
  options: Overrides & { source: string; baseDir: string },
): InstanceConfig {
  if (!validate(raw)) {
    // "must match then/else" only restates the errors beneath it.
    const problems = (validate.errors ?? [])
      .filter((e) => e.keyword !== "if")
      .map(describeError)
      .join("; ");
    throw new BootError(`${options.source} is invalid: ${problems}`);
  }
  const file = raw as unknown as {
    auth: {
      adapter: "dev" | "oidc";
      issuer?: string;
      clientId?: string;
      audience?: string;
      claims?: Partial<ClaimMapping>;
    };
    storage: { root: string };
    http: { host: string; port: number; publicUrl: string; maxBodyBytes?: number };
    files?: { maxUploadBytes?: number };
    skills?: { orgDir?: string; maxInstructionsBytes?: number };
    log?: { level?: string };
  };
  const port = options.port ?? file.http.port;
  return {
    auth: resolveAuth(file.auth),
    // --data is typed at a shell, so it is relative to the working directory; the file's own
    // root is relative to the file, so an instance folder can move as a whole.
    storage: {
      root: options.dataRoot ? resolve(options.dataRoot) : resolve(options.baseDir, file.storage.root),
    },
    http: {
      host: file.http.host,
      port,
      publicUrl: stripSlash(new URL(file.http.publicUrl).href),
      maxBodyBytes: file.http.maxBodyBytes ?? MAX_BODY_BYTES_DEFAULT,
    },
    files: { maxUploadBytes: file.files?.maxUploadBytes ?? MAX_UPLOAD_BYTES_DEFAULT },
    skills: {
      orgDir: file.skills?.orgDir === undefined ? undefined : resolve(options.baseDir, file.skills.orgDir),
      maxInstructionsBytes: file.skills?.maxInstructionsBytes ?? MAX_INSTRUCTIONS_BYTES_DEFAULT,
    },
    log: { level: file.log?.level ?? "info" },
  };
}

function resolveAuth(auth: {
  adapter: "dev" | "oidc";
  issuer?: string;
  clientId?: string;
  audience?: string;
  claims?: Partial<ClaimMapping>;
}): InstanceConfig["auth"] {
  if (auth.adapter === "dev") return { adapter: "dev" };
  // The schema requires both for oidc.
  const issuer = auth.issuer as string;
  const clientId = auth.clientId as string;
  return {
    adapter: "oidc",
    issuer,
    clientId,
    audience: auth.audience ?? clientId,
    claims: {
      subject: auth.claims?.subject ?? "sub",
      name: auth.claims?.name ?? "name",
      email: auth.claims?.email ?? "email",
      orgRole: auth.claims?.orgRole,
      orgAdminValues: auth.claims?.orgAdminValues ?? [],
    },
  };
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

function describeError(error: ErrorObject): string {
  const at = error.instancePath === "" ? "(top level)" : error.instancePath.slice(1).replaceAll("/", ".");
  if (error.keyword === "additionalProperties") {
    return `${at}: unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`;
  }
  if (error.keyword === "required") {
    return `${at}: missing field "${(error.params as { missingProperty: string }).missingProperty}"`;
  }
  if (error.keyword === "not" && at === "auth") {
    return `${at}: issuer, clientId, audience and claims apply only to the "oidc" adapter`;
  }
  if (error.keyword === "enum") {
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map((v) =>
      JSON.stringify(v),
    );
    return `${at}: must be one of ${allowed.join(", ")}`;
  }
  return `${at}: ${error.message ?? "is invalid"}`;
}
