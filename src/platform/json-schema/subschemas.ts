/** One schema object inside a JSON Schema document, read where it is written. */
export interface Subschema {
  node: Record<string, unknown>;
  /** JSON Pointer from the document's root; "" for the root. */
  pointer: string;
  /** The base URI its `$ref`s resolve against: the nearest `$id` above it or on it. */
  base: string;
  /** The schemas applied to the same value as this one: allOf, anyOf, oneOf, not, if/then/else, dependentSchemas. */
  inPlace: Record<string, unknown>[];
  /** The schemas applied to a part of the value: properties, items, contains, … */
  inside: Record<string, unknown>[];
}

// Keywords whose value is a schema, a list of schemas, or schemas by name, in both dialects
// Atrium compiles (draft-07 and 2020-12). A keyword not named here holds data (const, enum,
// default, examples) or is an annotation, and is not read as a schema.
const IN_PLACE_ONE = ["not", "if", "then", "else"];
const IN_PLACE_LIST = ["allOf", "anyOf", "oneOf"];
const IN_PLACE_BY_NAME = ["dependentSchemas", "dependencies"];
const INSIDE_ONE = [
  "items",
  "additionalItems",
  "contains",
  "additionalProperties",
  "propertyNames",
  "unevaluatedItems",
  "unevaluatedProperties",
];
const INSIDE_LIST = ["prefixItems", "items"];
const INSIDE_BY_NAME = ["properties", "patternProperties"];
// Not applied by themselves, only through a $ref.
const DEFINITIONS = ["$defs", "definitions"];

// Where a document without `$id` sits; any URI would do, it only anchors relative references.
const DOCUMENT_BASE = "atrium:/schema";

/** Every schema object of `root`, the root first, each once (a JSON document is a tree). */
export function subschemas(root: Record<string, unknown>, baseUri = DOCUMENT_BASE): Subschema[] {
  const found: Subschema[] = [];
  visit(root, "", baseUri, found);
  return found;
}

function visit(node: Record<string, unknown>, pointer: string, parentBase: string, found: Subschema[]): void {
  const base =
    typeof node.$id === "string" && !node.$id.startsWith("#") ? resolved(node.$id, parentBase) : parentBase;
  const entry: Subschema = { node, pointer, base, inPlace: [], inside: [] };
  found.push(entry);
  const child = (value: unknown, path: string, into: Record<string, unknown>[] | undefined) => {
    if (!isSchemaObject(value)) return;
    into?.push(value);
    visit(value, `${pointer}/${path}`, base, found);
  };
  for (const key of IN_PLACE_ONE) child(node[key], key, entry.inPlace);
  for (const key of INSIDE_ONE) child(node[key], key, entry.inside);
  for (const key of IN_PLACE_LIST) listed(node[key], key, (item, path) => child(item, path, entry.inPlace));
  for (const key of INSIDE_LIST) listed(node[key], key, (item, path) => child(item, path, entry.inside));
  for (const key of IN_PLACE_BY_NAME) named(node[key], key, (item, path) => child(item, path, entry.inPlace));
  for (const key of INSIDE_BY_NAME) named(node[key], key, (item, path) => child(item, path, entry.inside));
  for (const key of DEFINITIONS) named(node[key], key, (item, path) => child(item, path, undefined));
}

function listed(value: unknown, key: string, each: (item: unknown, path: string) => void): void {
  if (!Array.isArray(value)) return;
  for (const [index, item] of value.entries()) each(item, `${key}/${index}`);
}

function named(value: unknown, key: string, each: (item: unknown, path: string) => void): void {
  if (!isSchemaObject(value)) return;
  for (const [name, item] of Object.entries(value)) each(item, `${key}/${escapePointer(name)}`);
}

/** `reference` resolved against `base`, without its fragment; `base` when it is not a URI reference. */
function resolved(reference: string, base: string): string {
  try {
    return new URL(reference, base).href.split("#")[0] as string;
  } catch {
    return base;
  }
}

export function escapePointer(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

export function isSchemaObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
