#!/usr/bin/env node
// Structural invariants of src/, checked by script rather than by review (CRAFT.md). Each
// failure prints `file:line: [rule] what is wrong and what to do`; the last line is
// `structure: N checks passed, M failed` and the exit code is non-zero on any failure.
// Node builtins and the TypeScript compiler (a dev dependency); `npm test` runs it after vitest.
//
//   (a) no console.* in src/: log through src/log.ts, whose redaction is the point.
//   (b) storage paths are built by src/storage/paths.ts: outside src/storage/ and
//       src/instance/, no join()/resolve() over a `root`, and no ".." segment.
//   (c) the tool-name separator "__" appears in a string only in src/sources/tool-names.ts.
//   (d) no default exports in src/.
//   (e) no module imports a layer above its own (scripts/lib/layers.mjs names the layers; imports
//       are read with the TypeScript compiler's parser).
//   (f) no file in src/ is longer than 400 lines: past ~300 a file most often holds two concepts
//       (CRAFT.md), and one past 400 is split by concept, never trimmed of its comments.
//
// The route tables of README.md and docs/ are checked against the routes hono registers by
// test/integration/route-docs.test.ts, which reads them from the running app instead of parsing
// source.
//
// Source is scanned with comments blanked and string contents separated from code, so a
// comment that mentions console.log or `files__read` is not a violation.
//
//   node scripts/check-structure.mjs

import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { layerViolations } from "./lib/layers.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SRC = path.join(ROOT, "src");
const SOURCE_EXTENSIONS = [".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"];
const TOOL_NAMES_MODULE = "src/sources/tool-names.ts";
const PATH_MODULE_DIRS = ["src/storage/", "src/instance/"];
const MAX_FILE_LINES = 400;

const say = (text = "") => process.stdout.write(`${text}\n`);

// ---------------------------------------------------------------------------------------------
// Reading source

function listSourceFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...listSourceFiles(full));
    else if (SOURCE_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) found.push(full);
  }
  return found.sort();
}

const KEYWORDS_BEFORE_REGEX = new Set([
  "return",
  "typeof",
  "instanceof",
  "case",
  "in",
  "of",
  "delete",
  "void",
  "throw",
  "new",
  "yield",
  "await",
  "else",
  "do",
]);

/**
 * Splits a source file into `code` (same length as the text, with comments and the contents
 * of string, template and regex literals replaced by spaces, newlines kept) and `literals`
 * (each string literal, template chunk or regex literal with its offset and raw content).
 */
function scan(text) {
  const code = text.split("");
  const literals = [];
  const blank = (from, to) => {
    for (let k = from; k < to; k++) if (code[k] !== "\n") code[k] = " ";
  };
  // Stack of open template literals; each entry counts the braces open inside its `${`.
  const templates = [];
  let i = 0;

  const previousSignificant = () => {
    let k = i - 1;
    while (k >= 0 && /\s/.test(code[k])) k--;
    if (k < 0) return { char: "", word: "" };
    let w = k;
    while (w >= 0 && /[A-Za-z_$]/.test(code[w])) w--;
    return { char: code[k], word: code.slice(w + 1, k + 1).join("") };
  };

  const readTemplateChunk = () => {
    // i is just past a backtick or a `}` that closes `${`; reads up to the next `${` or backtick.
    const start = i;
    while (i < text.length) {
      if (text[i] === "\\") {
        i += 2;
        continue;
      }
      if (text[i] === "`") {
        literals.push({ start, value: text.slice(start, i) });
        blank(start, i);
        i += 1;
        templates.pop();
        return;
      }
      if (text[i] === "$" && text[i + 1] === "{") {
        literals.push({ start, value: text.slice(start, i) });
        blank(start, i);
        i += 2;
        return;
      }
      i += 1;
    }
  };

  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === '"' || c === "'") {
      const start = i + 1;
      i = start;
      while (i < text.length && text[i] !== c && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
      literals.push({ start, value: text.slice(start, i) });
      blank(start, i);
      i += 1;
    } else if (c === "`") {
      templates.push({ depth: 0 });
      i += 1;
      readTemplateChunk();
    } else if (templates.length > 0 && c === "{") {
      templates[templates.length - 1].depth += 1;
      i += 1;
    } else if (templates.length > 0 && c === "}") {
      const top = templates[templates.length - 1];
      i += 1;
      if (top.depth === 0) readTemplateChunk();
      else top.depth -= 1;
    } else if (c === "/") {
      const { char, word } = previousSignificant();
      const startsRegex =
        char === "" || "(,=:[!&|?{};+-*%<>~^".includes(char) || KEYWORDS_BEFORE_REGEX.has(word);
      i += 1;
      if (startsRegex) {
        const start = i;
        let inClass = false;
        while (i < text.length && text[i] !== "\n") {
          if (text[i] === "\\") {
            i += 2;
            continue;
          }
          if (text[i] === "[") inClass = true;
          else if (text[i] === "]") inClass = false;
          else if (text[i] === "/" && !inClass) break;
          i += 1;
        }
        literals.push({ start, value: text.slice(start, i), regex: true });
        blank(start, i);
        i += 1;
      }
    } else {
      i += 1;
    }
  }
  return { code: code.join(""), literals };
}

function lineIndex(text) {
  const starts = [0];
  for (let k = 0; k < text.length; k++) if (text[k] === "\n") starts.push(k + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** The offset of the parenthesis that closes the one at `open`, in blanked code. */
function closingParen(code, open) {
  let depth = 0;
  for (let k = open; k < code.length; k++) {
    if (code[k] === "(") depth += 1;
    else if (code[k] === ")") {
      depth -= 1;
      if (depth === 0) return k;
    }
  }
  return code.length;
}

const files = listSourceFiles(SRC).map((full) => {
  const text = readFileSync(full, "utf8");
  const rel = path.relative(ROOT, full).split(path.sep).join("/");
  return { rel, text, lineOf: lineIndex(text), ...scan(text) };
});

// ---------------------------------------------------------------------------------------------
// The checks. Each returns a list of `{ file, line, message }`.

function checkNoConsole() {
  const found = [];
  for (const f of files) {
    for (const m of f.code.matchAll(/\bconsole\s*[.[]/g)) {
      found.push({
        file: f.rel,
        line: f.lineOf(m.index),
        message: "console.* in src/: log through src/log.ts (createLogger), which redacts secrets.",
      });
    }
  }
  return found;
}

function checkStoragePaths() {
  const found = [];
  for (const f of files) {
    if (PATH_MODULE_DIRS.some((dir) => f.rel.startsWith(dir))) continue;
    for (const m of f.code.matchAll(/\b(join|resolve)\s*\(/g)) {
      const open = m.index + m[0].length - 1;
      const close = closingParen(f.code, open);
      const args = f.code.slice(open + 1, close);
      if (/\broot\b/.test(args)) {
        found.push({
          file: f.rel,
          line: f.lineOf(m.index),
          message:
            `${m[1]}() over a storage root outside src/storage/: ask StorageLayout (src/storage/paths.ts) ` +
            "for the path, so its segments are checked and it stays under the root.",
        });
      }
      const walksUp = f.literals.some(
        (lit) =>
          !lit.regex && lit.start > open && lit.start < close && /(^|[\\/])\.\.([\\/]|$)/.test(lit.value),
      );
      if (walksUp) {
        found.push({
          file: f.rel,
          line: f.lineOf(m.index),
          message:
            `${m[1]}() with a ".." segment outside src/storage/: a path that walks up from one StorageLayout ` +
            "built is a path StorageLayout does not know; add the folder you need to src/storage/paths.ts.",
        });
      }
    }
  }
  return found;
}

function checkToolNameSeparator() {
  const found = [];
  for (const f of files) {
    if (f.rel === TOOL_NAMES_MODULE) continue;
    for (const lit of f.literals) {
      // Cookie name prefixes (RFC 6265bis `__Host-`, `__Secure-`) are not tool names.
      if (!lit.value.replace(/^__(Host|Secure)-/, "").includes("__")) continue;
      found.push({
        file: f.rel,
        line: f.lineOf(lit.start),
        message:
          `${lit.regex ? "regex" : "string"} "${lit.value.slice(0, 60)}" contains the tool-name separator "__": join and split tool ` +
          `names only with ${TOOL_NAMES_MODULE} (joinToolName, splitToolName).`,
      });
    }
  }
  return found;
}

function checkNoDefaultExport() {
  const found = [];
  for (const f of files) {
    for (const m of f.code.matchAll(/\bexport\s+default\b|\bexport\s*\{[^}]*\bas\s+default\b/g)) {
      found.push({ file: f.rel, line: f.lineOf(m.index), message: "default export: use a named export." });
    }
  }
  return found;
}

function checkFileLength() {
  const found = [];
  for (const f of files) {
    // As an editor numbers them: any line break TypeScript takes for one (a lone CR too), and a
    // last line without its break counts.
    const lines =
      f.text.split(/\r\n|\r|\n|\u2028|\u2029/).length - (/(\r\n|\r|\n|\u2028|\u2029)$/.test(f.text) ? 1 : 0);
    if (lines <= MAX_FILE_LINES) continue;
    found.push({
      file: f.rel,
      line: MAX_FILE_LINES + 1,
      message:
        `${lines} lines, past the ${MAX_FILE_LINES}-line limit: split the file by concept, one concept per ` +
        "module named for what it holds (CRAFT.md).",
    });
  }
  return found;
}

// ---------------------------------------------------------------------------------------------

const CHECKS = [
  ["a", "no console.* in src/", checkNoConsole],
  ["b", "storage paths are built only in src/storage/", checkStoragePaths],
  ["c", 'the "__" separator appears only in src/sources/tool-names.ts', checkToolNameSeparator],
  ["d", "no default exports in src/", checkNoDefaultExport],
  [
    "e",
    "no module imports a layer above its own",
    () =>
      layerViolations(SRC).map((v) => ({
        ...v,
        file: v.file.startsWith("scripts/") ? v.file : `src/${v.file}`,
      })),
  ],
  ["f", `no file in src/ is longer than ${MAX_FILE_LINES} lines`, checkFileLength],
];

let passed = 0;
let failed = 0;
for (const [id, title, run] of CHECKS) {
  const violations = run();
  if (violations.length === 0) {
    passed += 1;
    say(`ok   (${id}) ${title}`);
    continue;
  }
  failed += 1;
  say(`FAIL (${id}) ${title}`);
  for (const v of violations) say(`  ${v.file}:${v.line}: [${id}] ${v.message}`);
}
say(`structure: ${passed} checks passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
