// Atrium's layers, bottom to top, and the check that no module imports a layer above its own.
// Imports are read with the TypeScript compiler's parser (import and export declarations,
// type-only ones included), never with a regex. CONTEXT.md names the layers.

import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/** Each top-level module or folder of src/ and its layer; a module may import its own layer or lower. */
export const LAYERS = {
  // 0 — leaves: nothing of Atrium's below them.
  errors: 0,
  clock: 0,
  crypto: 0,
  log: 0,
  text: 0,
  version: 0,
  ids: 0,
  // The kernel runtime: the clock, the scheduler and its lease seam, the event bus; it imports only
  // the log, and every layer above may use it.
  kernel: 0,
  // 1 — the data root.
  storage: 1,
  // 2 — the instance's configuration and its single-process lock.
  instance: 2,
  // 3 — who is asking, and which workspace they belong to.
  identity: 3,
  workspace: 3,
  // 4 — the web toolkit every HTTP feature shares: URL builders, JSON bodies, page HTML, the
  // request's typed context.
  web: 4,
  // 5 — capabilities: sources and the router, Atrium's authorization server and browser sign-in,
  // the platform apps.
  sources: 5,
  oauth: 5,
  signin: 5,
  platform: 5,
  // 6 — the HTTP app: middleware, the MCP front door, route tables.
  http: 6,
  // 7 — the process: wiring, the CLI, periodic chores.
  server: 7,
  cli: 7,
  "archive-purge": 7,
  "credentials-reseal": 7,
  housekeeping: 7,
  "graceful-stop": 7,
  "locked-boot": 7,
  "stop-exit": 7,
  "npm-launcher": 7,
};

/**
 * Upward imports tolerated, file by file, so that none can hide among them; an entry that no longer
 * exists fails the check too, so the list only shrinks. The app kit (issue 9) emptied it.
 */
export const KNOWN_UPWARD = [];

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === "node_modules" ? [] : sourceFiles(full);
    return /\.(ts|mts)$/.test(name) && !name.endsWith(".d.ts") ? [full] : [];
  });
}

/** The area of a path relative to src/: its first folder, or the module's own name. */
function areaOf(relative) {
  const [first, ...rest] = relative.split("/");
  return rest.length === 0 ? first.replace(/\.(ts|mts)$/, "") : first;
}

/** Every relative import between two areas of `srcDir`, as `from -> to` (paths relative to srcDir). */
export function crossAreaImports(srcDir) {
  const edges = [];
  for (const file of sourceFiles(srcDir)) {
    const text = readFileSync(file, "utf8");
    const parsed = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    for (const statement of parsed.statements) {
      const isImport = ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement);
      const specifier = isImport ? statement.moduleSpecifier : undefined;
      if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith(".")) continue;
      const from = path.relative(srcDir, file).split(path.sep).join("/");
      const to = path
        .relative(srcDir, path.resolve(path.dirname(file), specifier.text))
        .split(path.sep)
        .join("/");
      const line = parsed.getLineAndCharacterOfPosition(statement.getStart(parsed)).line + 1;
      if (areaOf(from) !== areaOf(to)) edges.push({ from, to, line });
    }
  }
  return edges;
}

/**
 * What breaks the layering in `srcDir`: imports of a higher layer not in `known`, areas missing
 * from `layers`, and `known` entries that no longer exist. Each is `{ file, line, message }`.
 */
export function layerViolations(srcDir, layers = LAYERS, known = KNOWN_UPWARD) {
  const edges = crossAreaImports(srcDir);
  const found = [];
  const seen = new Set();
  const unplaced = new Set();
  for (const edge of edges) {
    const [fromArea, toArea] = [areaOf(edge.from), areaOf(edge.to)];
    for (const area of [fromArea, toArea]) {
      if (area in layers || unplaced.has(area)) continue;
      unplaced.add(area);
      found.push({
        file: edge.from,
        line: edge.line,
        message: `src/${area} has no layer: add it to LAYERS in scripts/lib/layers.mjs.`,
      });
    }
    if (!(fromArea in layers) || !(toArea in layers) || layers[toArea] <= layers[fromArea]) continue;
    const key = `${edge.from} -> ${edge.to}`;
    seen.add(key);
    if (known.includes(key)) continue;
    found.push({
      file: edge.from,
      line: edge.line,
      message: `imports ${edge.to}, a higher layer (${toArea} ${layers[toArea]} above ${fromArea} ${layers[fromArea]}): move what both need down, or pass it in.`,
    });
  }
  for (const key of known) {
    if (!seen.has(key)) {
      found.push({
        file: "scripts/lib/layers.mjs",
        line: 1,
        message: `KNOWN_UPWARD lists "${key}", which no longer exists: delete it.`,
      });
    }
  }
  return found;
}
