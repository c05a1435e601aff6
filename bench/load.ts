// The request rows of issue 15's goal table, each against a baseline the bench runs itself, in
// both protocol eras, the targets of each comparison loaded in interleaved rounds
// (lib/interleave.ts): tools/call files__info against the bare SDK doing the same disk read; ping
// against a plain hono JSON route; tools/list against the bare SDK listing as many tools;
// initialize / server/discover with 9 skills, under dev and with an access token, against main's
// code before issue 15 run beside it (lib/before-issue-15.ts). Atrium and the baselines stay up
// together (idle servers cost nothing measurable), so rounds can alternate.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { checkOutBeforeIssue15 } from "./lib/before-issue-15.ts";
import type { ChildServer } from "./lib/child-server.ts";
import { type InterleavedTarget, runInterleaved } from "./lib/interleave.ts";
import type { LoadSettings } from "./lib/load-test.ts";
import { createMetadataFixture } from "./lib/metadata-fixture.ts";
import { preflight } from "./lib/preflight.ts";
import { progress } from "./lib/progress.ts";
import type { LoadGroup, LoadRow } from "./lib/report.ts";
import { openingMethod, type RpcCall, rpcRequest } from "./lib/rpc-request.ts";
import { type AtriumUnderTest, startAtrium } from "./lib/start-atrium.ts";
import { startBenchServer } from "./lib/start-bench-server.ts";
import { makeTempDir } from "./lib/temp-dir.ts";
import { ERAS, type Era } from "./lib/tool-call.ts";

/** The issue's initialize / server/discover row is measured with this many skills in the workspace. */
export const OPENING_SKILLS = 9;

interface Row {
  id: string;
  group: LoadGroup;
  role: LoadRow["role"];
  label: string;
  era?: Era;
  server: ChildServer;
  call: RpcCall;
}

export interface LoadPart {
  rows: LoadRow[];
  atrium: AtriumUnderTest;
}

/** Starts the servers, measures every request row; leaves Atrium up for the transfer part. */
export async function runLoadBench(settings: LoadSettings, only?: LoadGroup[]): Promise<LoadPart> {
  const fixture = await createMetadataFixture();
  progress("atrium: starting (9 skills, a file, an access token)");
  const atrium = await startAtrium(OPENING_SKILLS);
  const toolsDir = await makeTempDir("atrium-bench-tools");
  const toolsFile = join(toolsDir.path, "tools.json");
  await writeFile(toolsFile, JSON.stringify(atrium.tools));
  progress(`bare-sdk: starting (1 tool at /mcp, Atrium's ${atrium.tools.length} at /mcp/list)`);
  const bare = await startBenchServer("bare-sdk", "info", fixture, toolsFile);
  progress("plain-hono: starting");
  const hono = await startBenchServer("plain-hono", "info", fixture);
  const before = !only || only.includes("opening") ? await startBeforeIssue15() : undefined;

  const rowsByRun: Row[][] = [];
  const eraRows = (make: (era: Era) => Row[]) => ERAS.flatMap(make);
  const a = atrium.server;
  const mcp = atrium.mcpUrl;
  const token = { authorization: `Bearer ${atrium.accessToken}` };
  const filesInfo = (id: string) => ({ name: "files__info", arguments: { id } });
  rowsByRun.push(
    eraRows((era) => [
      row("files-info", "atrium", "atrium files__info", era, a, {
        url: mcp,
        method: "tools/call",
        params: filesInfo(atrium.fileId),
      }),
      row("files-info", "baseline", "bare SDK info", era, bare.server, {
        url: `${bare.base}/mcp`,
        method: "tools/call",
        params: { name: "info", arguments: { id: fixture.fileId } },
      }),
    ]),
    [
      // ping is a 2025-era method only (goals.ts NOT_SERVED says why).
      row("ping", "atrium", "atrium ping", "2025-11-25", a, { url: mcp, method: "ping" }),
      row("ping", "baseline", "plain hono JSON route", undefined, hono.server, {
        url: `${hono.base}/ping`,
        method: "ping",
      }),
    ],
    eraRows((era) => [
      row("tools-list", "atrium", "atrium tools/list", era, a, { url: mcp, method: "tools/list" }),
      row("tools-list", "baseline", `bare SDK, ${atrium.tools.length} tools`, era, bare.server, {
        url: `${bare.base}/mcp/list`,
        method: "tools/list",
      }),
    ]),
    // Dev and token in one run of rounds: the token's cost is a difference of neighbours; the
    // code before issue 15 in the same rounds, when it could be started.
    eraRows((era) => [
      row("opening", "atrium", `atrium ${openingMethod(era)}, dev`, era, a, {
        url: mcp,
        method: openingMethod(era),
      }),
      row("opening-token", "atrium", `atrium ${openingMethod(era)}, token`, era, a, {
        url: mcp,
        method: openingMethod(era),
        headers: token,
      }),
      ...(before
        ? [
            row(
              "opening",
              "baseline",
              `main before issue 15, ${openingMethod(era)}, dev`,
              era,
              before.server,
              {
                url: before.mcpUrl,
                method: openingMethod(era),
              },
            ),
          ]
        : []),
    ]),
  );

  const results: LoadRow[] = [];
  for (const rows of rowsByRun) {
    const wanted = rows.filter((r) => !only || only.includes(r.group));
    if (wanted.length === 0) continue;
    progress(`\n${wanted.map((r) => r.id).join(" | ")}`);
    const outcomes = await runInterleaved(wanted.map(toTarget), settings);
    for (const r of wanted) {
      const outcome = outcomes.get(r.id) ?? { error: "not run" };
      results.push({
        id: r.id,
        group: r.group,
        role: r.role,
        label: r.label,
        ...(r.era && { era: r.era }),
        ...outcome,
      });
    }
  }
  return { rows: results, atrium };
}

/**
 * Main's code before issue 15, set up as Atrium is (9 skills, a file, a token); undefined when it
 * cannot run here, and the opening rows are then judged against the recorded figure.
 */
async function startBeforeIssue15(): Promise<AtriumUnderTest | undefined> {
  const tree = await checkOutBeforeIssue15();
  if ("error" in tree) {
    progress(`before-issue-15: ${tree.error}; the opening rows use the recorded figure`);
    return undefined;
  }
  progress("before-issue-15: starting main's code before issue 15 (9 skills)");
  try {
    return await startAtrium(OPENING_SKILLS, tree.bin, "before-issue-15");
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0] : String(error);
    progress(`before-issue-15: did not start (${reason}); the opening rows use the recorded figure`);
    return undefined;
  }
}

function row(
  group: LoadGroup,
  role: Row["role"],
  label: string,
  era: Era | undefined,
  server: ChildServer,
  call: RpcCall,
): Row {
  return { id: era ? `${label} ${era}` : label, group, role, label, ...(era && { era }), server, call };
}

function toTarget(r: Row): InterleavedTarget {
  // A baseline with no era is loaded with the 2025 request's bytes; it reads only the JSON body.
  const request = rpcRequest(r.call, r.era ?? "2025-11-25");
  return {
    id: r.id,
    spec: { url: r.call.url, request, cpuUs: r.server.cpuUs },
    preflight: () => preflight(r.call.url, request, r.id),
  };
}
