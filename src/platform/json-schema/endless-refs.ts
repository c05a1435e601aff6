import { isSchemaObject, type Subschema, subschemas } from "./subschemas.ts";

/**
 * Where `schema` applies itself again to the same value before looking inside it — `{"$ref": "#"}`,
 * or `$defs` whose `allOf` and `$ref` lead round in a circle — as "#/json/pointer"; undefined
 * when it never does. Checking a value there would recurse until the stack ran out (a 500 before
 * this was checked), and JSON Schema leaves such a schema's meaning undefined. A loop that passes
 * through `properties`, `items` or another keyword that reads a part of the value is a recursive
 * schema, and ends with the value. Only what the root reaches counts; an unused definition does not.
 * Written to run after ajv has compiled the schema: ajv's own recursion per level is the deeper.
 */
export function endlessLoop(schema: Record<string, unknown>): string | undefined {
  const all = subschemas(schema);
  const entries = new Map(all.map((entry) => [entry.node, entry]));
  const targetOf = referenceResolver(all);
  const applied = (entry: Subschema) =>
    [...entry.inPlace, ...references(entry).map((reference) => targetOf(reference, entry.base))]
      .map((node) => (node ? entries.get(node) : undefined))
      .filter((next) => next !== undefined);

  // Depth first over what applies to the same value; meeting a schema still on the path is a loop.
  const onPath = new Set<Subschema>();
  const done = new Set<Subschema>();
  const loopFrom = (entry: Subschema): Subschema | undefined => {
    if (onPath.has(entry)) return entry;
    if (done.has(entry)) return undefined;
    onPath.add(entry);
    for (const next of applied(entry)) {
      const loop = loopFrom(next);
      if (loop) return loop;
    }
    onPath.delete(entry);
    done.add(entry);
    return undefined;
  };
  // Every schema the root reaches, through any keyword or reference, starts a search.
  const reached = new Set<Subschema>();
  const pending = [all[0] as Subschema];
  while (pending.length > 0) {
    const entry = pending.pop() as Subschema;
    if (reached.has(entry)) continue;
    reached.add(entry);
    const loop = loopFrom(entry);
    if (loop) return `#${loop.pointer}`;
    pending.push(...applied(entry));
    pending.push(...entry.inside.map((node) => entries.get(node)).filter((next) => next !== undefined));
  }
  return undefined;
}

function references(entry: Subschema): string[] {
  return ["$ref", "$dynamicRef"].flatMap((key) => {
    const value = entry.node[key];
    return typeof value === "string" ? [value] : [];
  });
}

/** Finds the schema a reference names: a resource by `$id`, then a JSON Pointer or an anchor in it. */
function referenceResolver(
  all: Subschema[],
): (reference: string, base: string) => Record<string, unknown> | undefined {
  const resources = new Map<string, Record<string, unknown>>();
  const anchors = new Map<string, Record<string, unknown>>();
  for (const { node, pointer, base } of all) {
    const id = node.$id;
    if (pointer === "" || (typeof id === "string" && !id.startsWith("#"))) resources.set(base, node);
    // draft-07 writes an anchor as a fragment-only $id; 2020-12 as $anchor or $dynamicAnchor.
    const names = [typeof id === "string" && id.startsWith("#") ? id.slice(1) : undefined];
    names.push(...["$anchor", "$dynamicAnchor"].map((key) => node[key]).filter((v) => typeof v === "string"));
    for (const name of names) if (name) anchors.set(`${base}#${name}`, node);
  }
  return (reference, base) => {
    let document: string;
    let fragment: string;
    try {
      const target = new URL(reference, base);
      document = target.href.split("#")[0] as string;
      fragment = decodeURIComponent(target.hash.slice(1));
    } catch {
      // Not a URI reference ajv could follow either.
      return undefined;
    }
    const root = resources.get(document);
    if (!root || fragment === "") return root;
    if (!fragment.startsWith("/")) return anchors.get(`${document}#${fragment}`);
    let at: unknown = root;
    for (const token of fragment.slice(1).split("/")) {
      const name = token.replaceAll("~1", "/").replaceAll("~0", "~");
      at =
        typeof at === "object" && at !== null && Object.hasOwn(at, name)
          ? (at as Record<string, unknown>)[name]
          : undefined;
    }
    return isSchemaObject(at) ? at : undefined;
  };
}
