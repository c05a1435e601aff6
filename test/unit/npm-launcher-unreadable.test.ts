import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";

// A server started through `sh -c` by npm (npx atrium serve) asks /proc/<shell>/stat every second
// whether npm is gone. A read that fails — here EMFILE, as when the server is out of file
// descriptors under a flood of connections — says nothing: taken for npm's death, the server
// stopped itself while npm was alive (ADR 0023).
it("a /proc read that fails (EMFILE) is not taken for npm's death", async () => {
  const dir = await mkdtemp(join(tmpdir(), "atrium-launcher-"));
  const launcher = resolve("src/npm-launcher.ts");
  const child = join(dir, "child.mts");
  await writeFile(
    child,
    `import { openSync } from "node:fs";
const { npmLauncher } = await import(${JSON.stringify(launcher)});
const l = npmLauncher(process.env);
const before = l.gone();
const held = [];
try { for (;;) held.push(openSync("/dev/null", "r")); } catch {}
const during = l.gone();
console.log(JSON.stringify({ before, during, held: held.length, ppid: process.ppid }));
`,
  );
  const fakeNpm = join(dir, "npm.mjs");
  // Stands for npm: a node process that runs `sh -c '…; true'` (the `; true` keeps sh from exec'ing).
  await writeFile(
    fakeNpm,
    `import { spawn } from "node:child_process";
const sh = spawn("sh", ["-c", process.argv[2]], { stdio: "inherit", env: process.env });
sh.on("exit", (code) => process.exit(code ?? 1));
`,
  );
  const tsx = `${process.execPath} --import ${resolve("node_modules/tsx/dist/esm/index.mjs")}`;
  const script = `ulimit -n 256; ${tsx} ${child}; true`;
  const out = await new Promise<string>((done, fail) => {
    const npm = spawn(process.execPath, [fakeNpm, script], {
      env: { ...process.env, npm_execpath: "/x/npm-cli.js", npm_node_execpath: process.execPath },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let text = "";
    npm.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    npm.on("exit", () => done(text));
    npm.on("error", fail);
  });
  await rm(dir, { recursive: true, force: true });
  const result = JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as { before: boolean; during: boolean };
  expect(result.before).toBe(false);
  // npm is alive throughout: gone() must stay false.
  expect(result.during).toBe(false);
}, 30_000);
