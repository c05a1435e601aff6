/**
 * How deep a request's JSON may nest, and how many arrays and objects it may hold in all. No tool
 * argument or REST body here comes near either. Parsing and validating a body costs by the
 * containers in it, not its bytes: a 4 MiB body of millions of arrays held the event loop for
 * 0.3–1.5 s per request, nested or side by side, where a flat body of the same size takes
 * 20–80 ms (adr/0080).
 */
export const MAX_JSON_DEPTH = 128;
export const MAX_JSON_CONTAINERS = 100_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * What makes `text`, read as JSON, too costly to parse — "nests deeper than 128 arrays or
 * objects", "holds more than 100000 arrays and objects" — or undefined. Looked at before parsing,
 * for the price of one pass over its characters; brackets inside strings do not count. Text that
 * is not JSON is left for the parser to refuse.
 */
export function jsonBoundsProblem(
  text: string,
  maxDepth = MAX_JSON_DEPTH,
  maxContainers = MAX_JSON_CONTAINERS,
): string | undefined {
  let depth = 0;
  let containers = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > maxDepth) return `nests deeper than ${maxDepth} arrays or objects`;
      if (++containers > maxContainers) return `holds more than ${maxContainers} arrays and objects`;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth--;
    }
  }
  return undefined;
}
