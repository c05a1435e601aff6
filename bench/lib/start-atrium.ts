import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { obtainAccessToken } from "./atrium-access-token.ts";
import { callTool } from "./call-tool.ts";
import { spawnServer } from "./child-server.ts";
import { findFreePort } from "./free-port.ts";
import { repoRoot } from "./paths.ts";
import type { RunningTarget } from "./target.ts";
import { makeTempDir } from "./temp-dir.ts";
import { waitForHttpOk } from "./wait-for-http.ts";

export const atriumBin = join(repoRoot, "bin", "atrium.js");

export function atriumAvailable(): boolean {
  return existsSync(atriumBin);
}

const FILE_ID = /^fl_[0-9a-f]{24}$/;

// Long enough that the token outlives any sensible run (2 s warm-up + BENCH_SECONDS); a run that
// outlasted it would fail on its 401s rather than report them as speed.
const ACCESS_TOKEN_TTL_SECONDS = 3_600;

/**
 * How each loaded request identifies itself. `none`: no credential, so the dev provider answers
 * with the local developer. `access-token`: an Atrium access token for the workspace, so every
 * request pays for verifying the at+jwt, its audience, its grant's revocation and its scopes.
 */
export type AtriumCredential = "none" | "access-token";

// Boots a throwaway Atrium instance under the dev auth provider, finds its workspace, creates one
// file, and aims the load at files__info for that file, carrying `credential`.
export async function startAtrium(credential: AtriumCredential): Promise<RunningTarget> {
  const temp = await makeTempDir("atrium-bench-instance");
  const dataDir = join(temp.path, "data");
  await mkdir(dataDir);
  const port = await findFreePort();
  const base = `http://127.0.0.1:${port}`;
  const instancePath = join(temp.path, "instance.json");
  const instance = {
    auth: { adapter: "dev" },
    storage: { root: dataDir },
    http: { host: "127.0.0.1", port, publicUrl: base },
    // Set for both credentials so the two Atrium targets run the very same instance.json.
    oauth: { accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS },
    // Request logging at info level would make Atrium pay for I/O the baselines do not do.
    log: { level: "warn" },
  };
  await writeFile(instancePath, JSON.stringify(instance, null, 2));

  const server = spawnServer({
    name: "atrium",
    cwd: repoRoot,
    args: [atriumBin, "serve", "--instance", instancePath, "--port", String(port), "--data", dataDir],
    keepStdinOpen: false,
  });
  await waitForHttpOk(server, `${base}/v1/health`);

  const mcpUrl = await discoverWorkspace(base);
  // Set up in the era every Atrium serves, so a missing 2026-07-28 fails only its own rows.
  const written = await callTool(
    { url: mcpUrl, tool: "files__write", arguments: { name: "bench.txt", text: "hello" } },
    "2025-11-25",
  );
  const id = written.structuredContent?.id;
  if (typeof id !== "string" || !FILE_ID.test(id)) {
    throw new Error(
      `files__write returned no fl_<24 hex> id in structuredContent: ${JSON.stringify(written)}`,
    );
  }
  const call = { url: mcpUrl, tool: "files__info", arguments: { id } };
  if (credential === "none") return { key: "atrium", server, call };
  // Under `dev` a bearer that is not a valid Atrium token is refused, never read as the developer,
  // so a passing pre-flight proves the load below goes through the token checks.
  const token = await obtainAccessToken(base, mcpUrl);
  return { key: "atrium-oauth", server, call: { ...call, headers: { authorization: `Bearer ${token}` } } };
}

interface Bootstrap {
  workspaces?: Array<{ id?: unknown; mcpUrl?: unknown }>;
}

async function discoverWorkspace(base: string): Promise<string> {
  const response = await fetch(`${base}/v1/bootstrap`, { signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /v1/bootstrap: HTTP ${response.status}: ${text.slice(0, 500)}`);
  const mcpUrl = (JSON.parse(text) as Bootstrap).workspaces?.[0]?.mcpUrl;
  if (typeof mcpUrl !== "string" || !/\/mcp\/ws_[0-9a-f]{16}$/.test(mcpUrl)) {
    throw new Error(
      `GET /v1/bootstrap returned no workspace with an /mcp/ws_<16 hex> mcpUrl: ${text.slice(0, 500)}`,
    );
  }
  return mcpUrl;
}
