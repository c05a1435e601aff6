import { Ajv, type ErrorObject } from "ajv";
import { hidesText, isUnshowable } from "../../text.ts";
import { credentialInputIn, holdsQueryCredential, holdsUserinfo, secretInputIn } from "./catalog-secrets.ts";
import { namesCredential } from "./model.ts";

// One catalog entry: an MCP registry `server.json` (static.modelcontextprotocol.io/schemas/
// …/server.schema.json), checked against the part of it Atrium reads, and what Atrium says about
// it: its id, where it came from, and whether a connection can be made from it (ADR 0038).

/** The largest `server.json` the catalog reads or accepts: a description, not a payload. */
export const MAX_ENTRY_BYTES = 64 * 1024;
/** Where Atrium's own facts about an entry go in a listing, beside the registry's `_meta` keys. */
export const CATALOG_META_KEY = "dev.atrium/catalog";

// The registry's name grammar (reverse-DNS namespace, one slash, server name), with each part
// starting with a letter or digit so no id derived from it is a dot-name or an option.
const SERVER_NAME = "^[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9._-]*$";
// An RFC 9110 field name (token).
const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
const CATALOG_ID = /^[a-z0-9][a-z0-9.-]*~[a-z0-9][a-z0-9._-]*$/;
const MAX_NAME_CHARS = 200;
const MAX_URL_CHARS = 2048;

/** A header a remote declares (the registry's KeyValueInput); only the fields Atrium reads are typed. */
export interface RemoteHeader {
  name: string;
  description?: string;
  isRequired?: boolean;
  isSecret?: boolean;
  value?: string;
  default?: string;
}

export interface ServerRemote {
  /** `streamable-http` is the one Atrium connects to; `sse` and others are listed, marked. */
  type: string;
  url: string;
  headers?: RemoteHeader[];
}

/** A `server.json` as the registry defines it; fields Atrium does not read are kept as they are. */
export interface ServerJson {
  name: string;
  description: string;
  version: string;
  title?: string;
  remotes?: ServerRemote[];
  packages?: unknown[];
  [field: string]: unknown;
}

const input = {
  type: "object",
  properties: {
    description: { type: "string", maxLength: 1000 },
    isRequired: { type: "boolean" },
    isSecret: { type: "boolean" },
    value: { type: "string", maxLength: 8192 },
    default: { type: "string", maxLength: 8192 },
    variables: { type: "object", additionalProperties: { type: "object" } },
  },
} as const;

/** The subset of the registry's server.schema.json that Atrium relies on; the rest passes through. */
export const serverJsonSchema = {
  type: "object",
  required: ["name", "description", "version"],
  properties: {
    $schema: { type: "string", maxLength: MAX_URL_CHARS },
    name: { type: "string", minLength: 3, maxLength: MAX_NAME_CHARS, pattern: SERVER_NAME },
    title: { type: "string", minLength: 1, maxLength: 100 },
    description: { type: "string", minLength: 1, maxLength: 100 },
    version: { type: "string", minLength: 1, maxLength: 255 },
    websiteUrl: { type: "string", maxLength: MAX_URL_CHARS },
    remotes: {
      type: "array",
      maxItems: 16,
      items: {
        type: "object",
        required: ["type", "url"],
        properties: {
          type: { type: "string", minLength: 1, maxLength: 64 },
          url: { type: "string", minLength: 1, maxLength: MAX_URL_CHARS },
          headers: {
            type: "array",
            maxItems: 16,
            items: {
              ...input,
              required: ["name"],
              properties: {
                ...input.properties,
                name: { type: "string", maxLength: 256, pattern: HEADER_NAME },
              },
            },
          },
        },
      },
    },
    packages: { type: "array", maxItems: 64, items: { type: "object" } },
    _meta: { type: "object" },
  },
} as const;

// A check stops at its first failure: an entry is an admin's or a registry's, and collecting
// every failure made one error per item of an array past its maxItems (ADR 0157).
const ajv = new Ajv({ strict: true });
const validateSchema = ajv.compile<ServerJson>(serverJsonSchema);

/**
 * The entry, or what is wrong with it in words an operator can act on: what an admin adds and what
 * the operator's folder holds, as given. Besides the schema: no label holds a control or invisible
 * character, and no URL or input under `remotes` or `packages` carries a secret, since every
 * signed-in person can read the catalog; the person connecting supplies it (ADR 0092).
 */
export function checkServerJson(value: unknown): { server: ServerJson } | { problem: string } {
  if (!validateSchema(value)) return { problem: describeErrors(validateSchema.errors ?? []) };
  const problem = labelProblem(value) ?? secretProblem(value);
  return problem === undefined ? { server: value } : { problem };
}

/**
 * A workspace's entry as Atrium stored it, read back: the schema and the secrets are checked, a
 * label's characters are not. Labels are judged as given (checkServerJson, at the add): judged
 * again at each load, a rule refusing more since (U+2028 in a title) made an entry an admin had
 * added drop out of the catalog (test/unit/platform/connections/catalog.test.ts "stored before").
 * A secret is refused however old the entry: a listing never shows one (ADR 0038).
 */
export function checkStoredServerJson(value: unknown): { server: ServerJson } | { problem: string } {
  if (!validateSchema(value)) return { problem: describeErrors(validateSchema.errors ?? []) };
  const problem = secretProblem(value);
  return problem === undefined ? { server: value } : { problem };
}

/** The first label, a header's description included, that holds what a reader cannot see. */
function labelProblem(server: ServerJson): string | undefined {
  for (const field of ["name", "title", "description", "version"] as const) {
    const text = server[field];
    if (typeof text === "string" && hasUnsafeCharacters(text)) {
      return `"${field}" holds a control, zero-width, bidirectional, variation or tag character; remove it.`;
    }
  }
  // A header's description is told to whoever connects ("This server needs the header …
  // (description)"), so it is screened as a label is; a U+202E in it was echoed
  // (test/unit/platform/connections/catalog-entry.test.ts "… header's description …").
  for (const [index, remote] of (server.remotes ?? []).entries()) {
    for (const [at, header] of (remote.headers ?? []).entries()) {
      if (header.description !== undefined && hasUnsafeCharacters(header.description)) {
        return `"remotes.${index}.headers.${at}.description" holds a control, zero-width, bidirectional, variation or tag character; remove it.`;
      }
    }
  }
  return undefined;
}

/** The first URL or input under `remotes` and `packages` that carries a credential. */
function secretProblem(server: ServerJson): string | undefined {
  // A problem names a remote by its place, never by its URL: a query string may hold a key, and
  // query strings are never logged.
  for (const [index, remote] of (server.remotes ?? []).entries()) {
    if (holdsUserinfo(remote.url)) {
      return `remotes.${index} has a user name or password in its URL; remove it from the catalog.`;
    }
    if (holdsQueryCredential(remote.url)) {
      return `remotes.${index} has a credential in its URL's query; remove it from the catalog: whoever connects supplies it.`;
    }
  }
  for (const [index, entry] of (server.packages ?? []).entries()) {
    const url = (entry as { transport?: { url?: unknown } | null }).transport?.url;
    if (typeof url === "string" && holdsUserinfo(url)) {
      return `packages.${index}.transport has a user name or password in its URL; remove it from the catalog.`;
    }
    if (typeof url === "string" && holdsQueryCredential(url)) {
      return `packages.${index}.transport has a credential in its URL's query; remove it from the catalog: whoever connects supplies it.`;
    }
  }
  const secret = secretInputIn(server);
  if (secret) {
    const named = secret.name === undefined ? "" : ` (${secret.name})`;
    const held = secret.field === "choices" ? "choices" : `a ${secret.field}`;
    return (
      `"${secret.place}"${named} is secret and has ${held} in the catalog, which every ` +
      `signed-in person can read; remove the ${secret.field}: whoever connects supplies it.`
    );
  }
  const input = credentialInputIn(server);
  if (!input) return undefined;
  const named = input.name === undefined ? "" : ` (${input.name})`;
  return (
    `"${input.place}"${named} is named as a credential and has a fixed value in the catalog, ` +
    "which every signed-in person can read; remove the value, or make it a {variable} " +
    '(e.g. "Bearer {token}") that whoever connects supplies.'
  );
}

/**
 * A label that is not one line of whole text, or that holds what a reader cannot see (text.ts):
 * a label holding an invisible character can pose as another. A list of its own here missed the
 * TAG characters and variation selectors that tool screening refuses.
 */
export function hasUnsafeCharacters(text: string): boolean {
  return isUnshowable(text) || hidesText(text);
}

function describeErrors(errors: ErrorObject[]): string {
  const said = errors.slice(0, 3).map((e) => {
    const where = e.instancePath === "" ? "the entry" : `"${e.instancePath.slice(1).replaceAll("/", ".")}"`;
    const allowed = e.keyword === "pattern" ? " (a reverse-DNS namespace, one slash, a name)" : "";
    return `${where} ${e.message}${e.instancePath === "/name" ? allowed : ""}`;
  });
  return `Not a server.json Atrium can use: ${said.join("; ")}.`;
}

/**
 * The entry's id: its registry name lowercased, the slash as `~` (`io.github.owner/name` →
 * `io.github.owner~name`). Stable across restarts and folder moves, readable, safe in a URL path
 * and as a file name. Two names that differ only in case are one id; the second is refused.
 */
export function catalogIdOf(serverName: string): string {
  return serverName.toLowerCase().replace("/", "~");
}

/** Whether a string from a request is shaped like a catalog id; nothing else reaches a path. */
export function isCatalogId(value: string): boolean {
  return value.length <= MAX_NAME_CHARS && CATALOG_ID.test(value);
}

/** Whether a connection can be made from an entry, and from which URL and header. */
export type Connectability =
  | { connectable: true; url: string; header?: RemoteHeader }
  | { connectable: false; reason: string };

/**
 * The first streamable-http remote with a concrete http(s) URL that needs at most one header: a
 * connection sends one header of its own (static auth). Templated URLs, SSE and packages are
 * listed but not connectable; the reason says why.
 */
export function connectabilityOf(server: ServerJson): Connectability {
  const remotes = server.remotes ?? [];
  const streamable = remotes.filter((remote) => remote.type === "streamable-http");
  if (streamable.length === 0) {
    if (remotes.length > 0) {
      const types = [...new Set(remotes.map((remote) => remote.type))].join(", ");
      return {
        connectable: false,
        reason: `Atrium connects to streamable-http remotes; this server offers ${types}.`,
      };
    }
    return {
      connectable: false,
      reason:
        "This server has no remote: it runs as a local package, and Atrium connects only to remote servers.",
    };
  }
  let reason = "";
  for (const remote of streamable) {
    if (remote.url.includes("{")) {
      reason = "Its streamable-http URL has {variables} that Atrium does not fill in.";
      continue;
    }
    if (!isHttpUrl(remote.url)) {
      reason = "Its streamable-http URL is not an http(s) URL.";
      continue;
    }
    // An empty value passes the entry's secret check, but a connection's URL with such a name in
    // its query is refused (checkServerUrl): listed as connectable, it could never be connected.
    if ([...new URL(remote.url).searchParams.keys()].some(namesCredential)) {
      reason = "Its streamable-http URL names a credential in its query; a connection sends one only sealed.";
      continue;
    }
    const sent = (remote.headers ?? []).filter((h) => h.isRequired === true || h.value !== undefined);
    if (sent.length > 1) {
      reason = `It needs ${sent.length} headers (${sent.map((h) => h.name).join(", ")}); a connection sends one.`;
      continue;
    }
    return sent[0]
      ? { connectable: true, url: remote.url, header: sent[0] }
      : { connectable: true, url: remote.url };
  }
  return { connectable: false, reason };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}
