import { join } from "node:path";
import { spawnServer } from "./child-server.ts";
import { findFreePort } from "./free-port.ts";
import type { MetadataFixture } from "./metadata-fixture.ts";
import { benchDir, repoRoot } from "./paths.ts";
import type { RunningTarget, TargetKey } from "./target.ts";
import { waitForHttpOk } from "./wait-for-http.ts";

// Starts one of the comparison servers in bench/servers/ (run through tsx like Atrium's sources)
// and points the call at its /mcp route with the fixture's file id. `toolsFile` (bare-sdk only)
// adds /mcp/list, serving the tool definitions in that file.
export async function startBenchServer(
  key: Exclude<TargetKey, "atrium" | "atrium-oauth">,
  tool: string,
  fixture: MetadataFixture,
  toolsFile?: string,
): Promise<RunningTarget & { base: string }> {
  const port = await findFreePort();
  const server = spawnServer({
    name: key,
    cwd: repoRoot,
    args: [
      "--import",
      "tsx",
      join(benchDir, "servers", `${key}.ts`),
      "--port",
      String(port),
      "--data",
      fixture.dir.path,
      ...(toolsFile ? ["--tools", toolsFile] : []),
    ],
    keepStdinOpen: true,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttpOk(server, `${base}/health`);
  return { key, base, server, call: { url: `${base}/mcp`, tool, arguments: { id: fixture.fileId } } };
}
