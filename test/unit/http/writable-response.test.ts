import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const SERVER = fileURLToPath(new URL("../../helpers/unwritable-response-server.ts", import.meta.url));
const STARTUP_MS = 15_000;

interface Child {
  port: number;
  stdout(): string;
  stderr(): string;
  stop(): Promise<void>;
}

const children: Child[] = [];
afterEach(async () => {
  while (children.length > 0) await children.pop()?.stop();
});

async function startServer(env: Record<string, string> = {}): Promise<Child> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", SERVER], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no port within ${STARTUP_MS} ms: ${stderr}`)),
      STARTUP_MS,
    );
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const match = /\{"port":(\d+)\}\n/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once("close", () => reject(new Error(`exited before listening: ${stderr}`)));
  });
  const handle: Child = {
    port,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGKILL");
      await exited;
    },
  };
  children.push(handle);
  return handle;
}

/** Every line the server logged after its port line, parsed; a line that is not JSON fails the test. */
function logLines(child: Child): Array<Record<string, unknown>> {
  return child
    .stdout()
    .split("\n")
    .slice(1)
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits (bounded) until the server has logged a line with this message. */
async function loggedLine(child: Child, msg: string): Promise<Record<string, unknown>> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    const line = logLines(child).find((entry) => entry.msg === msg);
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no "${msg}" log line; stdout: ${child.stdout()} stderr: ${child.stderr()}`);
}

describe("a response the Node adapter cannot write", () => {
  it("a header value with a control character is a JSON 500, logged as JSON, nothing on stderr", async () => {
    const server = await startServer();
    const response = await fetch(`http://127.0.0.1:${server.port}/bad-header`);
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response.headers.get("x-request-id")).toBe("req-bad-header");
    expect(await response.json()).toEqual({
      error: { code: "internal_error", message: expect.stringContaining("unexpected error") },
    });
    const line = await loggedLine(server, "response could not be sent as built");
    expect(line).toMatchObject({ level: 50, requestId: "req-bad-header", err: { code: "ERR_INVALID_CHAR" } });
    expect(server.stderr()).toBe("");
  });

  it("a status Node refuses is a JSON 500, logged as JSON, nothing on stderr", async () => {
    const server = await startServer();
    const response = await fetch(`http://127.0.0.1:${server.port}/bad-status`);
    expect(response.status).toBe(500);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("internal_error");
    await loggedLine(server, "response could not be sent as built");
    expect(server.stderr()).toBe("");
  });

  it("a writable response passes through untouched", async () => {
    const server = await startServer();
    const response = await fetch(`http://127.0.0.1:${server.port}/ok`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("hello");
    expect(server.stderr()).toBe("");
  });

  it("without the guard the adapter prints a raw stack on stderr (what the guard prevents)", async () => {
    const server = await startServer({ UNGUARDED: "1" });
    // The adapter answers a text/plain 500 and destroys the socket, sometimes before it is read.
    await fetch(`http://127.0.0.1:${server.port}/bad-header`).catch(() => undefined);
    for (let waited = 0; waited < 5_000 && server.stderr() === ""; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(server.stderr()).toMatch(/ERR_INVALID_CHAR[\s\S]*\n\s+at /);
  });
});
