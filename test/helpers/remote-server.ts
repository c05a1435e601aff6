import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Behaviour, ControlBody, ReceivedMessage } from "../fixtures/remote-server.ts";

export type { Behaviour as RemoteServerBehaviour, ControlBody as RemoteServerControl, ReceivedMessage };

const FIXTURE = fileURLToPath(new URL("../fixtures/remote-server.ts", import.meta.url));
const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;
const PORT_ATTEMPTS = 3;

/** A `tools/call` the server received: the tool's name and the arguments exactly as sent. */
export interface ReceivedCall {
  method: "tools/call";
  protocolVersion: string | null;
  name: string;
  arguments?: unknown;
}

/** A remote MCP server in a child process on 127.0.0.1 that a test can restart on its port. */
export interface ChildServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`; the same across restarts. */
  url: URL;
  /** SIGKILL, as a crash: no graceful close, open connections reset. Resolves once it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port (killing it first if it still runs). */
  restart(): Promise<void>;
  /** Ends it (SIGTERM, then SIGKILL if it lingers). Safe to call twice. */
  stop(): Promise<void>;
}

/** The fixture server (test/fixtures/remote-server.ts), with its control channel. */
export interface RemoteServer extends ChildServer {
  /** POST /control: applies the knobs and resolves with the behaviour now; rejects on a refused body. */
  control(body: ControlBody): Promise<Behaviour>;
  /** Every `tools/call` that reached the server since it started (or since `clearCalls`). */
  calls(): Promise<ReceivedCall[]>;
  /** Every JSON-RPC message that got past the 401 gate, in order. */
  requests(): Promise<ReceivedMessage[]>;
}

/**
 * Starts test/fixtures/remote-server.ts under tsx. `options` are control knobs applied before the
 * first request (e.g. `{ requireHeader: { name: "x-api-key", value } }`); `restart()` applies them
 * again, since a restarted server is a new process that remembers no live change.
 */
export async function startRemoteServer(options: ControlBody = {}): Promise<RemoteServer> {
  const spawnAt = (port: number) =>
    spawnChild(
      process.execPath,
      ["--import", "tsx", FIXTURE, "--options", JSON.stringify({ ...options, port })],
      {},
    );
  const child = await startChild(spawnAt(0), urlLine);
  const server = childServer(child, spawnAt, urlLine);
  const controlUrl = new URL("/control", server.url);

  async function getJson<T>(path: string, init?: RequestInit): Promise<T> {
    const response = await fetch(new URL(path, controlUrl), init);
    const body = await response.text();
    if (!response.ok) throw new Error(`remote server ${path} answered ${response.status}: ${body}`);
    return JSON.parse(body) as T;
  }

  return {
    ...server,
    control: (body) =>
      getJson<Behaviour>("/control", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    calls: () => getJson<ReceivedCall[]>("/control/calls"),
    requests: () => getJson<ReceivedMessage[]>("/control/requests"),
  };
}

const EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything";

/** The server-everything entry point, or undefined when the package is not installed. */
export function serverEverythingBin(): string | undefined {
  const manifest = join(REPO_ROOT, "node_modules", EVERYTHING_PACKAGE, "package.json");
  if (!existsSync(manifest)) return undefined;
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin?: string | Record<string, string> };
  const entry = typeof bin === "string" ? bin : bin?.["mcp-server-everything"];
  return entry ? join(dirname(manifest), entry) : undefined;
}

/**
 * Starts `mcp-server-everything streamableHttp` (the reference server, a 2025-era SDK v1 server
 * with sessions) with `PORT` set to a free port; it serves `/mcp`. It listens on every interface,
 * not only 127.0.0.1 (it takes no host), so a test reaches it only through `url`.
 */
export async function startServerEverything(): Promise<ChildServer> {
  const bin = serverEverythingBin();
  if (!bin) {
    throw new Error(
      `${EVERYTHING_PACKAGE} is not installed: add it as a devDependency (bin mcp-server-everything)`,
    );
  }
  const spawnAt = (port: number) =>
    spawnChild(process.execPath, [bin, "streamableHttp"], { PORT: String(port) });
  // The free port is free when we look, not when it binds: another process may take it between,
  // so a start that meets "in use" tries another port.
  for (let attempt = 1; ; attempt++) {
    const ready = listeningOn(await freePort());
    try {
      return childServer(await startChild(spawnAt(ready.port), ready), spawnAt, ready);
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !/in use/i.test(String(error))) throw error;
    }
  }
}

interface Child {
  process: ChildProcess;
  url: URL;
  exited: Promise<void>;
}

/** How a child says it is ready: resolves with its MCP URL once its output shows it listens. */
type Readiness = (output: string) => URL | undefined;

const urlLine: Readiness = (output) => {
  const line = output.split("\n").find((l) => l.startsWith('{"url"'));
  return line ? new URL((JSON.parse(line) as { url: string }).url) : undefined;
};

// server-everything prints a line naming its port once it listens (on stderr), and a line naming
// the port too when the bind fails, so a mention of the port counts only without "in use".
function listeningOn(port: number): Readiness & { port: number } {
  const ready = (output: string) =>
    new RegExp(`\\b${port}\\b`).test(output) && !/in use/i.test(output)
      ? new URL(`http://127.0.0.1:${port}/mcp`)
      : undefined;
  return Object.assign(ready, { port });
}

function childServer(first: Child, spawnAt: (port: number) => ChildProcess, ready: Readiness): ChildServer {
  let current = first;
  const url = first.url;
  const port = Number(url.port);
  async function kill(): Promise<void> {
    current.process.kill("SIGKILL");
    await current.exited;
  }
  return {
    url,
    kill,
    async restart() {
      await kill();
      current = await startChild(spawnAt(port), ready);
      if (current.url.href !== url.href) throw new Error(`restarted on ${current.url}, not ${url}`);
    },
    async stop() {
      current.process.kill("SIGTERM");
      const timer = setTimeout(() => current.process.kill("SIGKILL"), STOP_GRACE_MS);
      try {
        await current.exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function spawnChild(command: string, args: string[], env: Record<string, string>): ChildProcess {
  // stdin is a pipe the child watches: if the test process dies, the child's stdin ends and it exits.
  return spawn(command, args, {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
}

function startChild(child: ChildProcess, ready: Readiness): Promise<Child> {
  let output = "";
  let done = false;
  let probing = false;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("close", () => resolve());
  });
  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => {
      finish();
      child.kill("SIGKILL");
      reject(new Error(`server did not start within ${START_TIMEOUT_MS} ms; output:\n${output}`));
    }, START_TIMEOUT_MS);
    function finish(): void {
      done = true;
      clearTimeout(timer);
    }
    // Ready once its output names its URL and the port takes a connection. A line printed before
    // the bind (a refused connect) is not the end: the next output is checked again.
    function check(chunk?: Buffer): void {
      if (done) return;
      if (chunk) output += chunk.toString("utf8");
      if (probing) return;
      const url = ready(output);
      if (!url) return;
      probing = true;
      void reachable(url).then((open) => {
        probing = false;
        // Asked again: a line that came while probing may say the bind failed after all.
        if (done || !open || !ready(output)) return;
        finish();
        resolve({ process: child, url, exited });
      });
    }
    child.stdout?.on("data", check);
    child.stderr?.on("data", check);
    child.once("close", (code, signal) => {
      if (done) return;
      finish();
      reject(
        new Error(`server exited (code ${code}, signal ${signal}) before listening; output:\n${output}`),
      );
    });
  });
}

/** Whether the URL's port takes a TCP connection now. */
function reachable(url: URL): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(Number(url.port), url.hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A port nothing listens on right now (the OS's pick for port 0, released again). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (address && typeof address === "object" ? resolve(address.port) : reject()));
    });
  });
}
