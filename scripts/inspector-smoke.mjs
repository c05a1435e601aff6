#!/usr/bin/env node
// A real third-party client against a workspace URL, in both protocol eras: the MCP Inspector
// CLI 2.x (installed in tools/conformance, run by its Node 22) lists the tools of a fresh `dev`
// Atrium's first workspace, writes a file with files__write and reads its metadata back with
// files__info. Under `dev` a request with no credential is the local developer, so the CLI
// needs no header and no OAuth (--stored-auth-only keeps it from ever starting a login).
//
//   node scripts/inspector-smoke.mjs [--era 2025|2026]...   (default: both)
//
// Eras map to the Inspector's --protocol-era: 2025 = legacy (initialize, 2025-11-25),
// 2026 = modern (pinned to 2026-07-28, server/discover, no fallback).
// Exit 0 only if every step passed in every era; the last line is `inspector: N passed, M failed`.
// ATRIUM_INSPECTOR_KEEP=1 keeps the temp dir (data root, server log, the CLI's home).

import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { parseChoices, ScriptError, startDevAtrium, stopGroup, tailLines } from "./lib/dev-atrium.mjs";
import { ensureToolsInstalled, INSPECTOR, NODE22, ToolsError } from "./lib/tools-install.mjs";

const ERAS = { 2025: "legacy", 2026: "modern" };
const CLI_MS = 60_000;
const KEEP = process.env.ATRIUM_INSPECTOR_KEEP === "1";

const say = (text = "") => process.stdout.write(`${text}\n`);
const log = (msg) => say(`inspector: ${msg}`);

class StepError extends Error {}

/** One CLI run with --format json; its parsed `result`, or a StepError with its own words. */
function inspect(home, mcpUrl, era, args) {
  const argv = [
    INSPECTOR,
    "--cli",
    "--transport",
    "http",
    "--server-url",
    mcpUrl,
    "--protocol-era",
    ERAS[era],
    "--stored-auth-only",
    "--format",
    "json",
    ...args,
  ];
  return new Promise((resolve, reject) => {
    // Its own HOME: the CLI keeps a catalog and secrets under ~/.mcp-inspector.
    const child = spawn(NODE22, argv, {
      env: { ...process.env, HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    const timer = setTimeout(() => stopGroup(child), CLI_MS);
    child.on("error", (err) => reject(new StepError(`could not run the Inspector: ${err.message}`)));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const said = (stderr.trim() || stdout.trim()).slice(0, 1500);
      if (code !== 0)
        return reject(new StepError(`the Inspector CLI exited ${code ?? signal}: ${said || "(no output)"}`));
      try {
        const parsed = JSON.parse(stdout);
        if (!parsed || typeof parsed !== "object" || !("result" in parsed)) throw new Error("no result");
        resolve(parsed.result);
      } catch {
        reject(new StepError(`the Inspector CLI printed no JSON result: ${said || "(no output)"}`));
      }
    });
  });
}

function expect(ok, message) {
  if (!ok) throw new StepError(message);
}

// The steps for one era; each returns a line saying what it saw.
function steps(home, mcpUrl, era) {
  let fileId;
  const name = `inspector-${era}.txt`;
  const text = `written by the MCP Inspector CLI over the ${era} era`;
  return [
    [
      "tools/list",
      async () => {
        const r = await inspect(home, mcpUrl, era, ["--method", "tools/list"]);
        const names = Array.isArray(r?.tools) ? r.tools.map((t) => t.name) : [];
        for (const want of ["files__write", "files__info"])
          expect(names.includes(want), `tools/list has no ${want} (got ${names.join(", ") || "none"})`);
        return `${names.length} tools`;
      },
    ],
    [
      "tools/call files__write",
      async () => {
        const r = await inspect(home, mcpUrl, era, [
          "--method",
          "tools/call",
          "--tool-name",
          "files__write",
          "--tool-args-json",
          JSON.stringify({ name, text }),
        ]);
        expect(r?.isError !== true, `files__write answered an error: ${JSON.stringify(r?.content)}`);
        fileId = r?.structuredContent?.id;
        expect(
          /^fl_[0-9a-f]{24}$/.test(fileId ?? ""),
          `files__write returned no file id: ${JSON.stringify(r)}`,
        );
        return fileId;
      },
    ],
    [
      "tools/call files__info",
      async () => {
        expect(fileId, "skipped: files__write gave no file id");
        const r = await inspect(home, mcpUrl, era, [
          "--method",
          "tools/call",
          "--tool-name",
          "files__info",
          "--tool-arg",
          `id=${fileId}`,
        ]);
        const info = r?.structuredContent;
        expect(r?.isError !== true, `files__info answered an error: ${JSON.stringify(r?.content)}`);
        expect(
          info?.id === fileId && info?.name === name && info?.size === Buffer.byteLength(text),
          `files__info does not describe the file just written: ${JSON.stringify(info)}`,
        );
        return `${info.name}, ${info.size} bytes`;
      },
    ],
  ];
}

async function main() {
  let passed = 0;
  let failed = 0;
  let atrium = null;
  try {
    const eras = parseChoices(process.argv.slice(2), "--era", ERAS);
    ensureToolsInstalled(log);
    atrium = await startDevAtrium({ prefix: "atrium-inspector-", log });
    for (const era of eras) {
      say(`\n=== ${era} era (--protocol-era ${ERAS[era]})`);
      const home = path.join(atrium.tmp, `home-${era}`);
      mkdirSync(home);
      for (const [step, run] of steps(home, atrium.mcpUrl, era)) {
        try {
          say(`  ${step.padEnd(24)} PASS (${await run()})`);
          passed++;
        } catch (err) {
          if (!(err instanceof StepError)) throw err;
          say(`  ${step.padEnd(24)} FAIL: ${err.message}`);
          failed++;
        }
      }
    }
    const died = atrium.child.exitCode ?? atrium.child.signalCode;
    if (died !== null) {
      failed++;
      say(`\ninspector: Atrium exited (${died}) during the run\n${tailLines(atrium.output(), 40)}`);
    }
  } catch (err) {
    failed++;
    const known = err instanceof ScriptError || err instanceof ToolsError;
    say(`\ninspector: ERROR ${known ? err.message : (err?.stack ?? err)}`);
  } finally {
    await atrium?.stop(KEEP);
  }
  say(`inspector: ${passed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
