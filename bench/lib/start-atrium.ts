import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
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

// Boots a throwaway Atrium instance under the dev auth provider, finds its workspace, creates one
// file, and aims the load at files__info for that file.
export async function startAtrium(): Promise<RunningTarget> {
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
  const written = await callTool({
    url: mcpUrl,
    tool: "files__write",
    arguments: { name: "bench.txt", text: "hello" },
  });
  const id = written.structuredContent?.id;
  if (typeof id !== "string" || !FILE_ID.test(id)) {
    throw new Error(
      `files__write returned no fl_<24 hex> id in structuredContent: ${JSON.stringify(written)}`,
    );
  }
  return { key: "atrium", server, call: { url: mcpUrl, tool: "files__info", arguments: { id } } };
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
