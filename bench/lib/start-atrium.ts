import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { obtainAccessToken } from "./atrium-access-token.ts";
import { callTool } from "./call-tool.ts";
import { type ChildServer, spawnServer } from "./child-server.ts";
import { findFreePort } from "./free-port.ts";
import { repoRoot } from "./paths.ts";
import { type RpcCall, rpcRequest } from "./rpc-request.ts";
import { makeTempDir } from "./temp-dir.ts";
import { parseJsonRpcResult } from "./tool-result.ts";
import { waitForHttpOk } from "./wait-for-http.ts";

export const atriumBin = join(repoRoot, "bin", "atrium.js");

export function atriumAvailable(): boolean {
  return existsSync(atriumBin);
}

const FILE_ID = /^fl_[0-9a-f]{24}$/;

// Long enough that the token outlives any sensible run; a run that outlasted it would fail on
// its 401s rather than report them as speed.
const ACCESS_TOKEN_TTL_SECONDS = 3_600;

/** One Atrium instance set up for every request row: a workspace, a file, its skills, a token. */
export interface AtriumUnderTest {
  server: ChildServer;
  base: string;
  mcpUrl: string;
  workspaceId: string;
  /** The instance's data root (`storage.root`): where a part lays out what no tool can write. */
  dataDir: string;
  /** The file files__info reads. */
  fileId: string;
  /**
   * An Atrium access token for the workspace, obtained the way a client does. Under `dev` a
   * bearer that is not a valid token is refused, never read as the developer, so a passing
   * pre-flight with it proves the load goes through the token checks.
   */
  accessToken: string;
  /** The workspace's tools as tools/list gives them, for the bare SDK to serve as many. */
  tools: unknown[];
  skills: number;
}

// Boots a throwaway Atrium instance under the dev auth provider, finds its workspace, creates
// one file and enough workspace skills to make `skills` in all, and obtains a token. `bin` is
// this checkout's unless another tree's is given (lib/before-issue-15.ts).
export async function startAtrium(
  skills: number,
  bin = atriumBin,
  name = "atrium",
): Promise<AtriumUnderTest> {
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
    oauth: { accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS },
    // The figures were measured at the default `info` level, with every request logged.
    log: { level: "info" },
  };
  await writeFile(instancePath, JSON.stringify(instance, null, 2));

  const server = spawnServer({
    name,
    cwd: repoRoot,
    args: [bin, "serve", "--instance", instancePath, "--port", String(port), "--data", dataDir],
    keepStdinOpen: false,
  });
  await waitForHttpOk(server, `${base}/v1/health`);

  const mcpUrl = await discoverWorkspace(base);
  const call = (tool: string, args: Record<string, unknown>) =>
    callTool({ url: mcpUrl, tool, arguments: args }, "2025-11-25");
  const written = await call("files__write", { name: "bench.txt", text: "hello" });
  const fileId = written.structuredContent?.id;
  if (typeof fileId !== "string" || !FILE_ID.test(fileId)) {
    throw new Error(
      `files__write returned no fl_<24 hex> id in structuredContent: ${JSON.stringify(written)}`,
    );
  }
  const present =
    ((await call("skills__list", {})).structuredContent?.skills as unknown[] | undefined)?.length ?? 0;
  for (let i = present; i < skills; i++) {
    await call("skills__create", {
      name: `bench-skill-${i + 1}`,
      description: `Bench skill ${i + 1}: when a client opens a session in this workspace.`,
      body: `# Bench skill ${i + 1}\n\nGuidance a client reads when it opens a session. ${"Text. ".repeat(40)}`,
    });
  }
  const listed = await rpc({ url: mcpUrl, method: "tools/list" });
  const tools = (listed as { tools?: unknown[] }).tools ?? [];
  const accessToken = await obtainAccessToken(base, mcpUrl);
  const workspaceId = mcpUrl.slice(mcpUrl.lastIndexOf("/") + 1);
  return {
    server,
    base,
    mcpUrl,
    workspaceId,
    dataDir,
    fileId,
    accessToken,
    tools,
    skills: Math.max(present, skills),
  };
}

/** One checked JSON-RPC request in the 2025 era; answers its result. */
async function rpc(call: RpcCall): Promise<unknown> {
  const request = rpcRequest(call, "2025-11-25");
  const response = await fetch(call.url, { ...request, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`${call.method} at ${call.url}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  return parseJsonRpcResult(response.headers.get("content-type") ?? "", text);
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
