// `npm run bench -- remote`: what the call gate of a connection costs. The same remote tool
// (test/fixtures/remote-server.ts `echo`, a child process on 127.0.0.1) is called directly with
// the SDK client and through a connection's gate (snapshot, schema, credential, protocol, drift,
// and the audit ledger's three appends), in alternating rounds, one call at a time.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { systemClock } from "../src/kernel/clock.ts";
import { EventBus } from "../src/kernel/events.ts";
import { createLogger } from "../src/log.ts";
import { AuditLedger } from "../src/platform/connections/audit.ts";
import { ConnectionSource } from "../src/platform/connections/gate.ts";
import { RemoteSource } from "../src/platform/connections/remote-source.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES, photograph } from "../src/platform/connections/snapshot.ts";
import { guardedFetch } from "../src/sources/guarded-fetch.ts";
import { McpSource } from "../src/sources/mcp-source.ts";
import { StorageLayout } from "../src/storage/paths.ts";
import { NO_CALLER } from "../src/workspace/access-check.ts";
import { WorkspaceStore } from "../src/workspace/store.ts";
import { startRemoteServer } from "../test/helpers/remote-server.ts";
import { progress } from "./lib/progress.ts";

const ROUNDS = Number(process.env.BENCH_REMOTE_ROUNDS ?? 6);
const CALLS_PER_ROUND = Number(process.env.BENCH_REMOTE_CALLS ?? 300);
const OWNER = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";

export interface RemoteGateResult {
  directMsPerCall: number;
  gatedMsPerCall: number;
  /** (gated − direct) / direct: the share of a direct call's time the gate adds. */
  gateShare: number;
  calls: number;
}

function remoteSource(url: URL): McpSource {
  const fetch = guardedFetch({
    allowPrivate: true,
    timeoutMs: 30_000,
    maxResponseBytes: 16 * 1024 * 1024,
    eventStreams: true,
  });
  return new McpSource("fixture", { kind: "streamable-http", url, fetch, listMaxAgeMs: 60_000 });
}

async function timeCalls(call: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < CALLS_PER_ROUND; i += 1) await call(i);
  return performance.now() - started;
}

export async function runRemoteBench(): Promise<RemoteGateResult> {
  const root = await mkdtemp(join(tmpdir(), "atrium-bench-remote-"));
  const server = await startRemoteServer();
  const direct = remoteSource(server.url);
  // As the connections app holds it: failures retold (no credential here to take out).
  const live = new RemoteSource(remoteSource(server.url), () => []);
  try {
    const layout = new StorageLayout(root);
    const workspaces = new WorkspaceStore(layout, new EventBus(createLogger("silent")));
    await workspaces.load();
    const ws = (await workspaces.create("bench", OWNER)).id;
    const described = await live.describe();
    const taken = photograph(
      await live.listTools(),
      {
        version: 1,
        takenAt: new Date().toISOString(),
        generation: 1,
        protocolVersion: described.protocolVersion ?? "unknown",
      },
      DEFAULT_MAX_SNAPSHOT_BYTES,
      "remote",
    );
    if ("problems" in taken) throw new Error(taken.problems.join("; "));
    const ledger = new AuditLedger(layout.partition("connections"), systemClock);
    const gated = new ConnectionSource(
      "fixture",
      taken.snapshot,
      live,
      { credentialLapsed: () => false },
      ledger,
    );
    const caller = { principalId: OWNER, workspaceId: ws, access: NO_CALLER };
    const args = (i: number) => ({ text: `call ${i}` });
    // Warm both paths: connections, the listing the drift check reads, the compiled schema.
    await timeCalls((i) => direct.callTool("echo", args(i), caller));
    await timeCalls((i) => gated.callTool("echo", args(i), caller));
    let directMs = 0;
    let gatedMs = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      directMs += await timeCalls((i) => direct.callTool("echo", args(i), caller));
      gatedMs += await timeCalls((i) => gated.callTool("echo", args(i), caller, { requestId: `bench-${i}` }));
      progress(`remote gate: round ${round + 1}/${ROUNDS}`);
    }
    const calls = ROUNDS * CALLS_PER_ROUND;
    const directMsPerCall = directMs / calls;
    const gatedMsPerCall = gatedMs / calls;
    return {
      directMsPerCall,
      gatedMsPerCall,
      gateShare: (gatedMsPerCall - directMsPerCall) / directMsPerCall,
      calls,
    };
  } finally {
    await direct.close();
    await live.close();
    await server.stop();
    await rm(root, { recursive: true, force: true });
  }
}

export function formatRemote(result: RemoteGateResult): string {
  const ms = (value: number) => `${value.toFixed(3)} ms`;
  return [
    "remote tool call (fixture echo, 127.0.0.1, one at a time)",
    `  direct, SDK client:           ${ms(result.directMsPerCall)} per call`,
    `  through the connection gate:  ${ms(result.gatedMsPerCall)} per call`,
    `  the gate's share of a direct call: ${(result.gateShare * 100).toFixed(1)}% (goal < 15%), ${result.calls} calls each`,
    "",
  ].join("\n");
}
