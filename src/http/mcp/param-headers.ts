import { decodeHeaderValue } from "./header-value.ts";
import { isJsonObject } from "./json-shape.ts";
import type { PostHeaders } from "./media-types.ts";
import type { HeaderRefusal } from "./standard-headers.ts";

// 2026-07-28 Streamable HTTP, "Custom Headers from Tool Parameters" (SEP-2243): a tool's
// inputSchema may mark a parameter `x-mcp-header: "Region"`, and a client then mirrors the
// argument into `Mcp-Param-Region` so a gateway can route on it without reading the body. A server
// that reads the body MUST refuse (400, -32020) a header that disagrees with the argument, and a
// call that carries the argument without the header. No platform tool declares one; a connected
// server's tool does, and Atrium lists it verbatim. The SDK's own scan and check
// (scanXMcpHeaderDeclarations, validateMcpParamHeaders) run only inside createMcpHandler and are
// not exported, so this is their rule restated: the same declarations, conversions and refusals.

/** One parameter a tool mirrors into a header: where it sits in `arguments`, and the header. */
export interface ParamHeader {
  path: readonly string[];
  /** The `x-mcp-header` name, as declared (`Region` for `Mcp-Param-Region`). */
  name: string;
  type: unknown;
}

// RFC 9110 field-name token: what an x-mcp-header may be. A declaration that is not one names no
// header a client could send, so it is not expected.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const CANONICAL_DECIMAL = /^-?\d+(\.\d+)?$/;

// A source lists the same schema object until it lists again; each is walked once.
const declared = new WeakMap<object, readonly ParamHeader[]>();

/**
 * The headers a tool's inputSchema declares: an `x-mcp-header` on a property reached from the
 * root through `properties` alone (the only place the spec allows one).
 */
export function paramHeadersOf(inputSchema: unknown): readonly ParamHeader[] {
  if (!isJsonObject(inputSchema)) return [];
  const known = declared.get(inputSchema);
  if (known) return known;
  const found: ParamHeader[] = [];
  const visit = (schema: Record<string, unknown>, path: string[]) => {
    const name = schema["x-mcp-header"];
    if (path.length > 0 && typeof name === "string" && TOKEN.test(name)) {
      found.push({ path, name, type: schema.type });
    }
    if (!isJsonObject(schema.properties)) return;
    for (const [key, child] of Object.entries(schema.properties)) {
      if (isJsonObject(child)) visit(child, [...path, key]);
    }
  };
  visit(inputSchema, []);
  declared.set(inputSchema, found);
  return found;
}

/**
 * Why a call's `Mcp-Param-*` headers cannot be served, or undefined when each argument a declared
 * header mirrors is carried by that header. An argument that is absent or null expects no header
 * (one sent anyway is not looked at); an object or array is no header's value and is left to the
 * tool's own input schema.
 */
export function paramHeaderRefusal(
  declarations: readonly ParamHeader[],
  args: unknown,
  headers: PostHeaders,
): HeaderRefusal | undefined {
  for (const declaration of declarations) {
    const header = `Mcp-Param-${declaration.name}`;
    const argument = `arguments.${declaration.path.join(".")}`;
    const value = valueAt(args, declaration.path);
    const expected = headerText(value);
    if (expected === undefined) continue;
    const sent = headers.get(header.toLowerCase());
    if (sent === null)
      return {
        header: "(missing)",
        message: `the body carries ${argument}=${JSON.stringify(value)} but the ${header} header is absent`,
      };
    const decoded = decodeHeaderValue(sent);
    if (decoded === undefined)
      return { header: sent, message: `the ${header} header carries an invalid =?base64?…?= value` };
    if (!sameValue(decoded, value, expected, declaration.type))
      return {
        header: sent,
        message: `the body carries ${argument}=${JSON.stringify(value)} but the ${header} header carries ${JSON.stringify(decoded)}`,
      };
  }
  return undefined;
}

function valueAt(args: unknown, path: readonly string[]): unknown {
  let node = args;
  for (const key of path) {
    if (!isJsonObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** A primitive argument as its header carries it (the spec's type conversion), else undefined. */
function headerText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (
    typeof value === "number" &&
    Number.isFinite(value) &&
    !(Number.isInteger(value) && !Number.isSafeInteger(value))
  )
    return String(value);
  return undefined;
}

// Integers are compared as numbers, as the spec advises (`42.0` and `42` are one value).
function sameValue(decoded: string, value: unknown, expected: string, type: unknown): boolean {
  const numeric = (type === "integer" || type === "number") && typeof value === "number";
  if (numeric && CANONICAL_DECIMAL.test(decoded)) return Number(decoded) === value;
  return decoded === expected;
}
