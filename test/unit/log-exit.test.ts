import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../helpers/log-then-exit.ts", import.meta.url));

/** Runs the script to its end and returns its exit code and the lines it wrote to stdout. */
function run(how: string): Promise<{ code: number | null; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", SCRIPT, how], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, lines: out.split("\n").filter(Boolean) }));
  });
}

// The default destination queues lines and writes them after the call returns: none may be lost
// when the process ends, however it ends.
describe("the asynchronous log destination", () => {
  it.each([
    ["exit", 3],
    ["throw", 1],
    ["flush", 0],
  ])("writes every queued line when the process ends by %s", async (how, exitCode) => {
    const { code, lines } = await run(how);
    expect(code).toBe(exitCode);
    expect(lines).toHaveLength(2000);
    expect(JSON.parse(lines[1999] as string)).toMatchObject({ requestId: "r-1999", token: "[redacted]" });
  });
});
