// `npm run bench -- skills`: what the Skills Extension's `skills/list` costs (ADR 0098's
// amendment, ADR 0160). Each call answers every skill the caller sees with a SHA-256 digest and
// size per file, so its cost follows the bytes of those files. Two targets, interleaved: the
// workspace the load part sets up (the platform's skills and 9 created through skills__create),
// and a second workspace whose folder holds 50 skills of a few small files each, 5 of which also
// bundle a 1 MiB file — laid out on disk, as an operator does: no tool writes a bundled file.
// Loaded with 4 connections (CONNECTIONS), not 16.
import { mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { StorageLayout } from "../src/storage/paths.ts";
import { type InterleavedTarget, runInterleaved } from "./lib/interleave.ts";
import type { LoadSettings } from "./lib/load-test.ts";
import { preflight } from "./lib/preflight.ts";
import { progress } from "./lib/progress.ts";
import type { LoadRow } from "./lib/report.ts";
import { rpcRequest } from "./lib/rpc-request.ts";
import { type AtriumUnderTest, startAtrium } from "./lib/start-atrium.ts";
import { OPENING_SKILLS } from "./load.ts";

/** The second workspace's folder: this many skills, each SKILL.md and SMALL_FILES files beside it. */
export const LARGE_SCOPE = {
  skills: 50,
  smallFiles: 3,
  smallBytes: 4 * 1024,
  large: 5,
  largeBytes: 1024 * 1024,
};

const ERA = "2026-07-28";

/**
 * Fewer than the other rows' 16: a call of the large scope took 150 ms of CPU before ADR 0160,
 * and with 16 in flight on 2 cores no answer came back within a slice of a short run.
 */
const CONNECTIONS = 4;

/** The two `skills/list` rows, measured on an Atrium of their own. */
export async function runSkillsBench(settings: LoadSettings): Promise<LoadRow[]> {
  progress("atrium: starting (9 skills, then a workspace of 50 skills laid out on disk)");
  const atrium = await startAtrium(OPENING_SKILLS);
  const large = await workspaceOfManySkills(atrium);
  const rows = [
    { label: `skills/list, platform + ${OPENING_SKILLS} skills`, url: atrium.mcpUrl, least: OPENING_SKILLS },
    {
      label: `skills/list, ${LARGE_SCOPE.skills} skills (${LARGE_SCOPE.large} with 1 MiB)`,
      url: large.mcpUrl,
      least: LARGE_SCOPE.skills,
    },
  ];
  progress(`\n${rows.map((r) => r.label).join(" | ")} (${CONNECTIONS} connections)`);
  const targets = rows.map(({ label, url, least }): InterleavedTarget => {
    const request = rpcRequest({ url, method: "skills/list" }, ERA);
    return {
      id: label,
      spec: { url, request, cpuUs: atrium.server.cpuUs },
      preflight: async () => {
        const result = (await preflight(url, request, label)) as { skills?: unknown[] };
        // A skill whose file is not served is left out of the list whole: one that listed fewer
        // would be measuring less than it says.
        const listed = result.skills?.length ?? 0;
        if (listed < least)
          throw new Error(`${label}: skills/list listed ${listed} skills, expected ${least}+`);
      },
    };
  });
  const outcomes = await runInterleaved(targets, { ...settings, connections: CONNECTIONS });
  return rows.map(({ label }) => ({
    id: label,
    group: "skills-list",
    role: "atrium",
    label,
    era: ERA,
    ...(outcomes.get(label) ?? { error: "not run" }),
  }));
}

/** A second workspace of the dev user, its skills folder written straight to disk. */
async function workspaceOfManySkills(atrium: AtriumUnderTest): Promise<{ mcpUrl: string }> {
  const response = await fetch(`${atrium.base}/v1/workspaces`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "bench skills" }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`POST /v1/workspaces: HTTP ${response.status}: ${text}`);
  const { id, mcpUrl } = JSON.parse(text) as { id: string; mcpUrl: string };
  const scope = new StorageLayout(atrium.dataDir).workspaceSkillsDir(id);
  const written: string[] = [];
  const put = async (path: string, content: string | Buffer) => {
    await writeFile(path, content, { mode: 0o600 });
    written.push(path);
  };
  for (let i = 1; i <= LARGE_SCOPE.skills; i++) {
    const name = `listed-skill-${i}`;
    const folder = join(scope, name);
    await mkdir(join(folder, "references"), { recursive: true, mode: 0o700 });
    await put(
      join(folder, "SKILL.md"),
      `---\nname: ${name}\ndescription: Listed skill ${i}, for the skills/list bench.\n---\n\n# ${name}\n\n${"Guidance. ".repeat(200)}\n`,
    );
    for (let f = 1; f <= LARGE_SCOPE.smallFiles; f++)
      await put(
        join(folder, "references", `part-${f}.md`),
        `${"Reference text. ".repeat(LARGE_SCOPE.smallBytes / 16)}`,
      );
    if (i <= LARGE_SCOPE.large) await put(join(folder, "data.bin"), Buffer.alloc(LARGE_SCOPE.largeBytes, i));
    written.push(join(folder, "references"), folder);
  }
  written.push(scope);
  // A minute old: a listing read within 2 s of a change is read again on each use (ADR 0051).
  const old = new Date(Date.now() - 60_000);
  for (const path of written) await utimes(path, old, old);
  return { mcpUrl };
}
