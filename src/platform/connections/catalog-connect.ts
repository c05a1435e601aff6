import { Conflict, InvalidInput } from "../../errors.ts";
import type { CatalogEntry } from "./catalog.ts";
import { connectabilityOf, type RemoteHeader } from "./catalog-entry.ts";

// Turning `POST …/catalog/:id/connect` into the request the connections store takes. The catalog
// decides the URL and which header the server expects; the store decides the rest (the name's
// uniqueness, the SSRF guard, sealing the value, the first photograph).

/** How a connection authenticates to its server; `oauth` comes with the next issue. */
export type CatalogAuth = { kind: "none" } | { kind: "static"; header: string; value: string };

export interface CatalogConnectRequest {
  name: string;
  url: string;
  auth: CatalogAuth;
}

/**
 * Creates and photographs a connection in a workspace as a person, returning the connection as
 * `POST /v1/workspaces/:ws/connections` answers it. Implemented with the connections store.
 */
export type ConnectFromCatalog = (
  workspaceId: string,
  principalId: string,
  request: CatalogConnectRequest,
) => Promise<unknown>;

const CONNECTION_NAME_CHARS = 63;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// A header value is visible ASCII, spaces and tabs (RFC 9110 §5.5): no CR or LF to split a request.
const HEADER_VALUE = /^[\t\x20-\x7e]+$/;
const MAX_HEADER_VALUE_CHARS = 8192;

/**
 * The connection to make from an entry and the body `{"name"?, "auth"?}`. Without a name, one is
 * made from the server name's last part; without auth, a header the entry fixes is sent as it
 * is, and a header it requires is asked for by name. A value is never repeated in an error.
 */
export function connectRequestFor(entry: CatalogEntry, body: Record<string, unknown>): CatalogConnectRequest {
  for (const field of Object.keys(body)) {
    if (field !== "name" && field !== "auth") {
      throw new InvalidInput(`Unknown field "${field}": the body is {"name"?, "auth"?}.`);
    }
  }
  const reach = connectabilityOf(entry.server);
  if (!reach.connectable) {
    throw new Conflict(
      "catalog_entry_not_connectable",
      `Catalog entry ${entry.id} cannot be connected: ${reach.reason}`,
    );
  }
  const name = body.name === undefined ? connectionNameOf(entry.server.name) : body.name;
  if (typeof name !== "string") throw new InvalidInput('"name" is a string: the connection\'s name.');
  const auth = body.auth === undefined ? defaultAuth(reach.header) : readAuth(body.auth);
  checkHeader(reach.header, auth);
  return { name, url: reach.url, auth };
}

/**
 * A connection name (`^[a-z][a-z0-9-]{0,62}$`) from the part of a registry name after its slash:
 * `io.github.acme/Weather_API` → `weather-api`.
 */
export function connectionNameOf(serverName: string): string {
  const last = serverName.slice(serverName.indexOf("/") + 1).toLowerCase();
  const name = last
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^[^a-z]+/, "")
    .slice(0, CONNECTION_NAME_CHARS)
    .replace(/-+$/, "");
  if (name === "") {
    throw new InvalidInput(
      `No connection name can be made from "${serverName}": send {"name": "…"}, lowercase words joined by "-".`,
    );
  }
  return name;
}

function defaultAuth(header: RemoteHeader | undefined): CatalogAuth {
  if (header?.value !== undefined && !header.value.includes("{")) {
    return { kind: "static", header: header.name, value: header.value };
  }
  return { kind: "none" };
}

function readAuth(value: unknown): CatalogAuth {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInput('"auth" is {"kind": "none"} or {"kind": "static", "header", "value"}.');
  }
  const auth = value as Record<string, unknown>;
  if (auth.kind === "none") {
    onlyFields(auth, ["kind"]);
    return { kind: "none" };
  }
  if (auth.kind !== "static") {
    throw new InvalidInput('"auth.kind" is "none" or "static".');
  }
  onlyFields(auth, ["kind", "header", "value"]);
  if (typeof auth.header !== "string" || !HEADER_NAME.test(auth.header)) {
    throw new InvalidInput('"auth.header" is an HTTP header name, e.g. "Authorization" or "X-Api-Key".');
  }
  if (
    typeof auth.value !== "string" ||
    auth.value.length > MAX_HEADER_VALUE_CHARS ||
    !HEADER_VALUE.test(auth.value)
  ) {
    throw new InvalidInput(
      `"auth.value" is the header's value: 1 to ${MAX_HEADER_VALUE_CHARS} visible ASCII characters, spaces or tabs.`,
    );
  }
  return { kind: "static", header: auth.header, value: auth.value };
}

function onlyFields(auth: Record<string, unknown>, allowed: string[]): void {
  for (const field of Object.keys(auth)) {
    if (!allowed.includes(field)) {
      throw new InvalidInput(`Unknown field "auth.${field}" for auth kind "${String(auth.kind)}".`);
    }
  }
}

/** The server's declared header must be the one sent; a server that declares none may take any. */
function checkHeader(declared: RemoteHeader | undefined, auth: CatalogAuth): void {
  if (declared === undefined) return;
  const about = declared.description ? ` (${declared.description})` : "";
  if (auth.kind === "none") {
    throw new InvalidInput(
      `This server needs the header "${declared.name}"${about}. Send "auth": ` +
        `{"kind": "static", "header": "${declared.name}", "value": "…"}.`,
    );
  }
  if (auth.header.toLowerCase() !== declared.name.toLowerCase()) {
    throw new InvalidInput(
      `This server takes its credential in the header "${declared.name}"${about}, not "${auth.header}".`,
    );
  }
}
