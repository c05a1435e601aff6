// The route tables of README.md and docs/*.md, read for the check that they and the routes
// Atrium registers agree (test/integration/route-docs.test.ts). Node builtins only.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/** `:param` (with an optional `{regex}` or `?`), `{param}`, `<param>` and `ws_…` all read as `:`. */
export function normalisePath(raw) {
  let p = raw.split("?")[0].trim();
  if (p.length > 1 && p.endsWith("/")) p = p.slice(0, -1);
  return p
    .split("/")
    .map((segment) => {
      if (/^:[A-Za-z_][\w]*(\{.*\})?\??$/.test(segment)) return ":";
      if (/^\{[^}]+\}$|^<[^>]+>$/.test(segment)) return ":";
      if (segment.includes("…") || segment.includes("...")) return ":";
      return segment;
    })
    .join("/");
}

/**
 * Route rows of README.md and docs/*.md under `root`: table lines with a backtick-quoted path,
 * their methods from a method cell of the row or from the span itself (`GET /v1/health`).
 */
export function documentedRoutes(root) {
  const docs = path.join(root, "docs");
  const files = [
    path.join(root, "README.md"),
    ...(existsSync(docs)
      ? readdirSync(docs)
          .filter((name) => name.endsWith(".md"))
          .sort()
      : []
    ).map((name) => path.join(docs, name)),
  ].filter((file) => existsSync(file));
  return files.flatMap((file) => routeRows(file, path.relative(root, file)));
}

function routeRows(file, relative) {
  const methodList = new RegExp(
    `^(?:${HTTP_METHODS.join("|")}|ALL|ANY)(?:\\s*[,/]\\s*(?:${HTTP_METHODS.join("|")}))*$`,
  );
  const entries = [];
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, index) => {
      if (!line.trimStart().startsWith("|")) return;
      const rowMethods = new Set();
      const paths = [];
      for (const cell of line.split("|")) {
        const plain = cell.replace(/[`*_]/g, "").trim().toUpperCase();
        if (methodList.test(plain)) for (const m of plain.match(/[A-Z]+/g)) rowMethods.add(m);
      }
      for (const span of line.matchAll(/`([^`]+)`/g)) {
        const own = span[1].trim().match(/^([A-Z]+(?:\s*[,/]\s*[A-Z]+)*)\s+(\/\S*)$/);
        if (own && methodList.test(own[1])) paths.push({ methods: own[1].match(/[A-Z]+/g), raw: own[2] });
        else if (/^\/\S*$/.test(span[1].trim())) paths.push({ methods: undefined, raw: span[1].trim() });
      }
      for (const p of paths) {
        entries.push({
          file: relative,
          line: index + 1,
          raw: p.raw,
          path: normalisePath(p.raw),
          methods: new Set(p.methods ?? rowMethods),
        });
      }
    });
  return entries;
}

/** Whether a documented row covers a registered route (`method` is hono's, `ALL` for app.all). */
export function covers(entry, route) {
  if (entry.path !== normalisePath(route.path)) return false;
  if (route.method === "ALL" || entry.methods.size === 0) return true;
  return entry.methods.has(route.method) || entry.methods.has("ALL") || entry.methods.has("ANY");
}

/** Whether a registered route answers `method` on a documented row's path. */
export function registers(routes, entry, method) {
  return routes.some(
    (route) =>
      normalisePath(route.path) === entry.path &&
      (route.method === "ALL" || method === "ALL" || route.method === method),
  );
}
