import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import { parseInstance } from "../../src/instance/load.ts";
import { createLogger } from "../../src/log.ts";
import { startAtrium } from "../../src/server.ts";
import { ATRIUM_VERSION } from "../../src/version.ts";
import { runAtriumCli, runAtriumMain, writeCliInstance } from "../helpers/cli.ts";

async function tempDir(onFinished: TestContext["onTestFinished"]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-cli-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// Each test starts node through tsx; on a loaded shared machine that alone can take many seconds.
const BOOT_MS = 60_000;
const SLOW = { timeout: 200_000 };

describe("help and version", SLOW, () => {
  it.for(["--help", "-h", "serve --help", "serve -h"])(
    "`atrium %s` prints the usage to stdout and exits 0",
    async (args, { onTestFinished }) => {
      // One spelling goes through the process (bin/atrium.js exits with main's answer); the others
      // differ only in argument parsing, so they run main in this process and skip a cold start.
      const exit =
        args === "--help"
          ? await runAtriumCli(args.split(" "), await tempDir(onTestFinished), BOOT_MS)
          : await runAtriumMain(args.split(" "));
      expect(exit.code).toBe(0);
      expect(exit.stdout).toMatch(/^Usage: atrium serve \[--instance PATH\] \[--port N\] \[--data DIR\]/);
      expect(exit.stdout).toContain("--version");
      expect(exit.stderr).toBe("");
    },
  );

  it("`atrium --version` prints the package's version and exits 0", async ({ onTestFinished }) => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    expect(ATRIUM_VERSION).toBe(pkg.version);
    const exit = await runAtriumCli(["--version"], await tempDir(onTestFinished), BOOT_MS);
    expect(exit).toMatchObject({ code: 0, stdout: `atrium ${pkg.version}\n`, stderr: "" });
  });

  it("no command, an unknown command or an unknown flag is a usage error on stderr (exit 2)", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    // No command goes through the process (its exit code is 2); the others run main in process.
    for (const args of [[], ["start"], ["serve", "--verbose"]]) {
      const exit = args.length === 0 ? await runAtriumCli(args, dir, BOOT_MS) : await runAtriumMain(args);
      expect(exit.code, args.join(" ")).toBe(2);
      expect(exit.stdout).toBe("");
      expect(exit.stderr).toContain("Usage: atrium serve");
    }
  });
});

describe("--port", SLOW, () => {
  it.for(["", " ", "0x1f90", "1e3", "80.0", "65536", "+80", "８０"])(
    "%j is not a whole number from 0 to 65535: exit 2 with the one sentence",
    async (port) => {
      // A port that passed would reach the missing instance file and exit 1.
      const exit = await runAtriumMain(["serve", "--instance", "/nonexistent/instance.json", "--port", port]);
      expect(exit.code).toBe(2);
      expect(exit.stderr).toBe(`--port must be a whole number from 0 to 65535, not "${port}".\n`);
    },
  );

  it.for(["0", "65535", "08080"])("%j passes the check", async (port) => {
    const exit = await runAtriumMain(["serve", "--instance", "/nonexistent/instance.json", "--port", port]);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain("No instance file at /nonexistent/instance.json");
  });
});

describe("an empty --data or --instance", SLOW, () => {
  // A script's `--data "$DIR"` with DIR unset: it acted on instance.json's storage.root, for
  // `serve` the configured (say, production) root, as if no --data had been given.
  it.for(
    [
      ["serve", "--data="],
      ["serve", "--data", ""],
      ["credentials", "reseal", "--data="],
      ["serve", "--instance="],
      ["credentials", "reseal", "--instance", ""],
    ].map((args) => [JSON.stringify(args), args] as const),
  )(
    "atrium %s is a usage error naming the flag (exit 2), never the file's root",
    async ([, args], { onTestFinished }) => {
      const dir = await tempDir(onTestFinished);
      const instance = await writeCliInstance(dir, { log: { level: "silent" } });
      await mkdir(join(dir, "data"));
      const withInstance = args.some((arg) => arg.startsWith("--instance"))
        ? args
        : [...args, "--instance", instance];
      const exit = await runAtriumMain(withInstance);
      const flag = args.some((arg) => arg.startsWith("--data")) ? "data" : "instance";
      expect(exit).toMatchObject({ code: 2, stdout: "" });
      expect(exit.stderr).toMatch(new RegExp(`^--${flag} is empty: give it `));
      expect(exit.stderr).not.toContain(join(dir, "data"));
    },
  );
});

describe("a busy port", SLOW, () => {
  it("names the port, suggests --port 0, exits 1, and leaves no lock on the root", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    onTestFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as { port: number }).port;
    const instance = await writeCliInstance(dir);
    const exit = await runAtriumCli(["serve", "--instance", instance, "--port", String(port)], dir, BOOT_MS);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(`Cannot listen on 127.0.0.1:${port}`);
    expect(exit.stderr).toContain("use --port 0 (any free port) or another --port N");
    expect(exit.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(dir, "data", "_instance", "instance.lock"))).toBe(false);
  });
});

describe("a damaged data root", SLOW, () => {
  /** A root a server has run on, with one workspace (the developer's), stopped again. */
  async function usedRoot(onFinished: TestContext["onTestFinished"]) {
    const dir = await tempDir(onFinished);
    const instance = await writeCliInstance(dir);
    const config = parseInstance(
      {
        auth: { adapter: "dev" },
        storage: { root: "./data" },
        http: { host: "127.0.0.1", port: 0, publicUrl: "http://127.0.0.1:8787" },
      },
      { source: "test", baseDir: dir },
    );
    const atrium = await startAtrium(config, { log: createLogger("silent") });
    const [workspace] = await atrium.firstWorkspace.ensure(DEV_PRINCIPAL);
    await atrium.close();
    return { dir, instance, root: join(dir, "data"), workspaceId: workspace?.id ?? "" };
  }

  const serveOn = (instance: string) => runAtriumMain(["serve", "--instance", instance]);

  it("a truncated invitation stops boot naming the file and what to do, exit 1, no stack", async ({
    onTestFinished,
  }) => {
    const { instance, root } = await usedRoot(onTestFinished);
    const file = join(root, "_instance", "invitations", `inv_${"a".repeat(32)}.json`);
    await mkdir(join(root, "_instance", "invitations"), { recursive: true });
    await writeFile(file, '{"id": "inv_');
    const exit = await serveOn(instance);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toBe(
      `atrium: ${file} is not valid JSON (it ends before its JSON does). Restore it from a backup, or move it out of the data root.\n`,
    );
  });

  it("a file where a folder belongs is named with its code and what to do, exit 1, no stack", async ({
    onTestFinished,
  }) => {
    const { instance, root } = await usedRoot(onTestFinished);
    const users = join(root, "_instance", "users");
    await rm(users, { recursive: true, force: true });
    await writeFile(users, "not a folder");
    const exit = await serveOn(instance);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toBe(
      `atrium: cannot read ${users} (ENOTDIR): part of that path is a file where Atrium keeps a folder; ` +
        "put the folder back from a backup, or move the file out of the data root.\n",
    );
    expect(existsSync(join(root, "_instance", "instance.lock"))).toBe(false);
  });
});
