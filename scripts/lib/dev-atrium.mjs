// A throwaway Atrium for the conformance and Inspector scripts: `serve` under the `dev` identity
// provider (a request with no credential is the local developer) on a free 127.0.0.1 port with a
// fresh data root, and the developer's first workspace's MCP URL from /v1/bootstrap.

import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./tools-install.mjs";

export class ScriptError extends Error {}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function fetchWithTimeout(url, ms = 2000, init = {}) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    return await fetch(url, { headers: { accept: "application/json" }, ...init, signal: ac.signal });
  } finally {
    clearTimeout(t);
  }
}

export function tailLines(text, n) {
  const lines = text.split("\n");
  return lines.slice(Math.max(0, lines.length - n)).join("\n");
}

// In its own process group, so it and anything it spawns can be ended together.
export function startGroup(cmd, args, opts) {
  return spawn(cmd, args, { ...opts, detached: true });
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

export async function stopGroup(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const kill = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {
      try {
        child.kill(sig);
      } catch {}
    }
  };
  kill("SIGTERM");
  if (!(await waitExit(child, 5000))) {
    kill("SIGKILL");
    await waitExit(child, 2000);
  }
}

/**
 * Start Atrium. `command` replaces `node bin/atrium.js` (run by /bin/sh with the serve
 * arguments appended); `isInterrupted` is polled while waiting for it to come up.
 * @returns {Promise<{ base: string, mcpUrl: string, workspaceId: string, tmp: string,
 *   child: import("node:child_process").ChildProcess, output: () => string,
 *   stop: (keep?: boolean) => Promise<void> }>}
 */
export async function startDevAtrium({ prefix, log, command, startMs = 60_000, isInterrupted = () => null }) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), prefix));
  const dataDir = path.join(tmp, "data");
  mkdirSync(dataDir);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const instanceFile = path.join(tmp, "instance.json");
  // publicUrl carries the real port: Origin checks, the OAuth issuer and the mcpUrl in
  // /v1/bootstrap are derived from it, and the suites' DNS-rebinding probe sends
  // Origin http://127.0.0.1:<port>.
  const instance = {
    auth: { adapter: "dev" },
    storage: { root: dataDir },
    http: { host: "127.0.0.1", port, publicUrl: base },
  };
  writeFileSync(instanceFile, `${JSON.stringify(instance, null, 2)}\n`);

  const serveArgs = ["serve", "--instance", instanceFile, "--port", String(port), "--data", dataDir];
  log(`starting ${command ? `${command}` : "node bin/atrium.js"} ${serveArgs.join(" ")}`);
  const opts = { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] };
  const child = command
    ? startGroup("/bin/sh", ["-c", `exec ${command} "$@"`, "sh", ...serveArgs], opts)
    : startGroup(process.execPath, [path.join(ROOT, "bin", "atrium.js"), ...serveArgs], opts);
  const serverLog = createWriteStream(path.join(tmp, "server.log"));
  let output = "";
  const capture = (chunk) => {
    serverLog.write(chunk);
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout.on("data", capture);
  child.stderr.on("data", capture);
  let exited = null;
  child.on("exit", (code, signal) => {
    exited = code ?? signal;
  });
  child.on("error", (err) => {
    exited = err.message;
  });
  const stop = async (keep = false) => {
    await stopGroup(child);
    await new Promise((resolve) => serverLog.end(resolve));
    if (keep) log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  };

  try {
    const deadline = Date.now() + startMs;
    let last = "no answer";
    for (;;) {
      const why = isInterrupted();
      if (why) throw new ScriptError(`interrupted by ${why}`);
      if (exited !== null)
        throw new ScriptError(`Atrium exited (${exited}) before GET /v1/health answered 200`);
      try {
        const res = await fetchWithTimeout(`${base}/v1/health`);
        await res.arrayBuffer();
        if (res.status === 200) break;
        last = `HTTP ${res.status}`;
      } catch (err) {
        last = err.cause?.code ?? err.message;
      }
      if (Date.now() > deadline)
        throw new ScriptError(
          `GET ${base}/v1/health did not answer 200 within ${startMs} ms (last: ${last})`,
        );
      await sleep(200);
    }
    log(`Atrium is up on ${base}`);
    const { mcpUrl, workspaceId } = await firstWorkspace(base, log);
    return { base, mcpUrl, workspaceId, tmp, child, output: () => output, stop };
  } catch (err) {
    if (output) log(`Atrium output (tail):\n${tailLines(output, 40)}`);
    await stop();
    throw err;
  }
}

async function firstWorkspace(base, log) {
  const res = await fetchWithTimeout(`${base}/v1/bootstrap`, 10_000);
  const text = await res.text();
  if (res.status !== 200)
    throw new ScriptError(`GET /v1/bootstrap answered HTTP ${res.status}: ${text.slice(0, 500)}`);
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ScriptError(`GET /v1/bootstrap did not return JSON: ${text.slice(0, 500)}`);
  }
  const ws = (Array.isArray(body?.workspaces) ? body.workspaces : []).find(
    (w) => typeof w?.mcpUrl === "string",
  );
  if (!ws)
    throw new ScriptError(`GET /v1/bootstrap listed no workspace with an mcpUrl: ${text.slice(0, 500)}`);
  let mcpUrl = new URL(ws.mcpUrl);
  if (!/^\/mcp\/ws_[0-9a-f]{16}$/.test(mcpUrl.pathname))
    throw new ScriptError(`bootstrap mcpUrl ${ws.mcpUrl} is not of the form <origin>/mcp/ws_<16 hex>`);
  if (mcpUrl.origin !== base) {
    log(`WARNING: bootstrap mcpUrl ${ws.mcpUrl} does not point at ${base}; using ${base}${mcpUrl.pathname}`);
    mcpUrl = new URL(mcpUrl.pathname, base);
  }
  log(`workspace ${ws.id ?? "?"} (${ws.name ?? "?"}), MCP URL ${mcpUrl.href}`);
  return { mcpUrl: mcpUrl.href, workspaceId: ws.id };
}

/**
 * The values of a repeatable `--<flag> <choice>` option (each once, in order), or every choice
 * when the flag is not given; anything else is a ScriptError naming what is accepted.
 */
export function parseChoices(argv, flag, choices) {
  const chosen = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag && Object.hasOwn(choices, argv[i + 1] ?? "")) chosen.push(argv[++i]);
    else
      throw new ScriptError(
        `unknown argument ${argv[i]}${argv[i] === flag ? ` ${argv[i + 1] ?? ""}` : ""}; use ${flag} ${Object.keys(choices).join("|")} (repeatable)`,
      );
  }
  return chosen.length ? [...new Set(chosen)] : Object.keys(choices);
}
