import { parseArgs } from "node:util";
import { resealCredentials } from "./credentials-reseal.ts";
import { BootError } from "./errors.ts";
import { DEV_PRINCIPAL } from "./identity/providers/dev.ts";
import { loadInstance } from "./instance/load.ts";
import { acquireInstanceLock, InstanceLocked } from "./instance/lock.ts";
import { type Clock, isWithin, systemClock } from "./kernel/clock.ts";
import { createLogger, type Logger } from "./log.ts";
import { npmLauncher } from "./npm-launcher.ts";
import type { RunningAtrium } from "./server.ts";
import { exitOnceStopped } from "./stop-exit.ts";
import { CorruptJson } from "./storage/atomic.ts";
import { ATRIUM_VERSION } from "./version.ts";
import { workspaceMcpUrl } from "./web/urls.ts";

const USAGE = `Usage: atrium serve [--instance PATH] [--port N] [--data DIR]
       atrium credentials reseal [--instance PATH] [--data DIR]
       atrium archive purge --older-than DAYS [--dry-run] [--instance PATH] [--data DIR]
       atrium --help | --version

  serve               run the server
  credentials reseal  re-seal every stored credential under the newest of credentials.keys,
                      so older keys can be removed (the server must be stopped: it takes the root)
  archive purge       remove the deleted (archived) workspaces archived more than DAYS days ago,
                      with what apps keep for them, listing each (the server must be stopped: it
                      takes the root); --dry-run only lists them, beside a running server too
  --instance PATH     the instance file (default ./instance.json)
  --port N            listen on port N instead of http.port (0: any free port)
  --data DIR          keep all state in DIR instead of storage.root
  -h, --help          print this help
  --version           print Atrium's version

SIGTERM or SIGINT stops the server gracefully (http.drainSeconds); another one, a second or more
later, stops it at once (one sooner, such as npm forwarding the same Ctrl-C, is the same request).
`;

/** The flags that name a file or folder, and what each names. */
const PATH_FLAGS = { instance: "the instance file's path", data: "a folder" } as const;

/** How often a server started by npm checks that npm is still its parent. */
const PARENT_POLL_MS = 1_000;

/**
 * A command's `--name VALUE` flags, its `--name` switches and `-h`/`--help`: the values, or the
 * exit code when there is nothing more to do (the usage printed: 0 when asked for, 2 after a
 * mistake).
 */
function parseFlags<F extends string, S extends string = never>(
  args: string[],
  flags: readonly F[],
  output: CliOutput,
  switches: readonly S[] = [],
): { values: Partial<Record<F, string>> & Partial<Record<S, boolean>> } | { exit: number } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        ...Object.fromEntries(flags.map((flag) => [flag, { type: "string" as const }])),
        ...Object.fromEntries(switches.map((name) => [name, { type: "boolean" as const }])),
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (error) {
    output.err(`${(error as Error).message}\n${USAGE}`);
    return { exit: 2 };
  }
  if (values.help) {
    output.out(USAGE);
    return { exit: 0 };
  }
  // An empty path is a mistake, never "not given": `--data "$DIR"` with DIR unset would otherwise
  // act on instance.json's storage.root, the production root for `serve` (cli.test.ts "an empty").
  for (const [flag, what] of Object.entries(PATH_FLAGS)) {
    if (values[flag] === "") {
      output.err(`--${flag} is empty: give it ${what} (was a variable it was given unset?).\n`);
      return { exit: 2 };
    }
  }
  return { values: values as Partial<Record<F, string>> & Partial<Record<S, boolean>> };
}

/**
 * The platform apps' instance.json sections. The apps, the server and the SDK behind them are
 * imported only by the commands that load an instance, so `--help`, `--version` and a usage
 * error answer without compiling all of Atrium first.
 */
async function appSections() {
  const [{ PLATFORM_APPS }, { configSections }] = await Promise.all([
    import("./platform/index.ts"),
    import("./platform/kit.ts"),
  ]);
  return configSections(PLATFORM_APPS);
}

/** Where a command writes what it says: the process's streams, or a test's capture. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

const PROCESS_OUTPUT: CliOutput = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** The only entry point. Returns the process exit code; a running server keeps the process alive. */
export async function main(argv: string[], output: CliOutput = PROCESS_OUTPUT): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h") {
    output.out(USAGE);
    return 0;
  }
  if (command === "--version") {
    output.out(`atrium ${ATRIUM_VERSION}\n`);
    return 0;
  }
  if (command === "credentials") return credentialsCommand(rest, output);
  if (command === "archive") return archiveCommand(rest, output);
  if (command !== "serve") {
    output.err(command === undefined ? USAGE : `Unknown command "${command}".\n${USAGE}`);
    return 2;
  }
  const parsed = parseFlags(rest, ["instance", "port", "data"], output);
  if ("exit" in parsed) return parsed.exit;
  const { values } = parsed;
  // Digits only: Number() would also take "", " ", "0x1f90" and "1e3".
  const port =
    values.port === undefined || !/^[0-9]{1,5}$/.test(values.port) ? undefined : Number(values.port);
  if (values.port !== undefined && (port === undefined || port > 65535)) {
    output.err(`--port must be a whole number from 0 to 65535, not "${values.port}".\n`);
    return 2;
  }
  try {
    const config = await loadInstance(values.instance ?? "instance.json", {
      ...(port === undefined ? {} : { port }),
      ...(values.data === undefined ? {} : { dataRoot: values.data }),
      sections: await appSections(),
    });
    const log = createLogger(config.log.level);
    const { startAtrium } = await import("./server.ts");
    const atrium = await startAtrium(config, { log, exit: (code) => process.exit(code) });
    stopWhenAsked(atrium, log);
    output.out(`Atrium is listening on ${atrium.url} (identity provider: ${config.auth.adapter})\n`);
    if (config.auth.adapter === "dev") {
      const [first] = await atrium.firstWorkspace.ensure(DEV_PRINCIPAL);
      if (first) output.out(`MCP URL of "${first.name}": ${workspaceMcpUrl(atrium.url, first.id)}\n`);
    } else {
      output.out(`Sign in at ${atrium.url}/auth/login; GET /v1/bootstrap lists your MCP URLs.\n`);
    }
    return 0;
  } catch (error) {
    return reportBootProblem(error, output);
  }
}

/** What to do about a file or folder of the data root boot could not read, by the error's code. */
const FILESYSTEM_ADVICE: Readonly<Record<string, string>> = {
  ENOTDIR:
    "part of that path is a file where Atrium keeps a folder; put the folder back from a backup, or move the file out of the data root.",
  EISDIR:
    "it is a folder where Atrium keeps a file; restore the file from a backup, or move the folder out of the data root.",
  EACCES:
    "the user Atrium runs as may not use it; give that user ownership of the data root (Atrium makes folders 0700 and files 0600).",
  EPERM:
    "the user Atrium runs as may not use it; give that user ownership of the data root (Atrium makes folders 0700 and files 0600).",
};
/**
 * What to do when the machine, not a file, refused a call: a full disk, a read-only mount, too many
 * open files. Said whether or not the error names a path (a write on an open file names none), and
 * never "restore it from a backup", which would replace a good file (test/unit/cli.test.ts "the machine's").
 */
const ENVIRONMENT_ADVICE: Readonly<Record<string, string>> = {
  ENOSPC: "the disk holding the data root is full; free space on it and start again.",
  EDQUOT:
    "the disk quota of the user Atrium runs as is used up; free space or raise the quota, and start again.",
  EFBIG:
    "a file met the size limit on one file (`ulimit -f`, or the filesystem's own); raise that limit and start again.",
  EROFS:
    "the data root is on a filesystem mounted read-only; mount it read-write (check `dmesg` first) and start again.",
  EMFILE: "Atrium has as many files open as it may; raise the open-file limit (`ulimit -n`) and start again.",
  ENFILE:
    "the system has as many files open as it may; close other programs' files or raise its limit, and start again.",
};
const READ_SYSCALLS = new Set(["open", "read", "scandir", "opendir", "stat", "lstat", "readlink"]);

/** A boot problem said in one `atrium:` line, exit 1; anything else (a bug) is thrown on, with its stack. */
function reportBootProblem(error: unknown, output: CliOutput): 1 {
  const problem = bootProblem(error);
  if (problem === undefined) throw error;
  output.err(`atrium: ${problem}\n`);
  return 1;
}

/**
 * The one line a command prints for a problem with the instance or its data root, or undefined
 * for anything else (a bug, whose stack is worth having). A damaged root is the operator's to
 * repair, so it is named by path and what to do, never answered with a stack trace: a file that
 * does not parse (by place, never its text: ADR 0076), a filesystem error on a path
 * (test/integration/cli.test.ts "a damaged data root"), and the machine refusing a call, path or
 * not (ENVIRONMENT_ADVICE, ADR 0165).
 */
export function bootProblem(error: unknown): string | undefined {
  if (error instanceof BootError) return error.message;
  if (error instanceof CorruptJson) {
    return `${error.message} Restore it from a backup, or move it out of the data root.`;
  }
  const { code, path, syscall } = (error ?? {}) as NodeJS.ErrnoException;
  if (typeof code !== "string") return undefined;
  const environment = ENVIRONMENT_ADVICE[code];
  if (environment !== undefined) {
    const call = `${syscall ?? "a filesystem call"}${typeof path === "string" ? ` ${path}` : ""}`;
    return `${call} failed (${code}): ${environment}`;
  }
  if (typeof path !== "string") return undefined;
  const verb = syscall === undefined || READ_SYSCALLS.has(syscall) ? "read" : "write";
  const advice = FILESYSTEM_ADVICE[code] ?? "restore it from a backup, or move it out of the data root.";
  return `cannot ${verb} ${path} (${code}): ${advice}`;
}

/**
 * `atrium credentials reseal`: checks its flags and hands the rest to resealCredentials
 * (src/credentials-reseal.ts), with the root's lock as `serve` takes it.
 */
async function credentialsCommand(args: string[], output: CliOutput): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === "--help" || subcommand === "-h") {
    output.out(USAGE);
    return 0;
  }
  if (subcommand !== "reseal") {
    output.err(
      `${subcommand === undefined ? "atrium credentials needs a subcommand" : `Unknown subcommand "credentials ${subcommand}"`}.\n${USAGE}`,
    );
    return 2;
  }
  const parsed = parseFlags(rest, ["instance", "data"], output);
  if ("exit" in parsed) return parsed.exit;
  const { values } = parsed;
  try {
    const config = await loadInstance(values.instance ?? "instance.json", {
      ...(values.data === undefined ? {} : { dataRoot: values.data }),
      sections: await appSections(),
    });
    const log = createLogger(config.log.level);
    return await resealCredentials(
      {
        config,
        lockRoot: (layout) =>
          acquireInstanceLock(layout, { publicUrl: config.http.publicUrl, log, existingRoot: true }),
      },
      output,
    );
  } catch (error) {
    return reportBootProblem(error, output);
  }
}

/** Days are digits only, like --port: Number() would also take "", "1e3" and "0x1e". */
const DAYS = /^[0-9]{1,5}$/;
/** The longest retention `storage.archiveRetentionDays` takes; past it nothing is old enough. */
const MAX_OLDER_THAN_DAYS = 36_500;

/**
 * `atrium archive purge --older-than DAYS [--dry-run]`: checks its flags and hands the rest to
 * purgeArchive (src/archive-purge.ts), with the root's lock as `serve` takes it.
 */
async function archiveCommand(args: string[], output: CliOutput): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === "--help" || subcommand === "-h") {
    output.out(USAGE);
    return 0;
  }
  if (subcommand !== "purge") {
    output.err(
      `${subcommand === undefined ? "atrium archive needs a subcommand" : `Unknown subcommand "archive ${subcommand}"`}.\n${USAGE}`,
    );
    return 2;
  }
  const parsed = parseFlags(rest, ["instance", "data", "older-than"], output, ["dry-run"]);
  if ("exit" in parsed) return parsed.exit;
  const { values } = parsed;
  const days = values["older-than"];
  if (days === undefined || !DAYS.test(days) || Number(days) > MAX_OLDER_THAN_DAYS) {
    output.err(
      days === undefined
        ? "atrium archive purge needs --older-than DAYS: the archived workspaces it removes are those archived more than DAYS days ago (0: all of them). --dry-run lists them first.\n"
        : `--older-than must be a whole number of days from 0 to ${MAX_OLDER_THAN_DAYS}, not "${days}".\n`,
    );
    return 2;
  }
  try {
    const config = await loadInstance(values.instance ?? "instance.json", {
      ...(values.data === undefined ? {} : { dataRoot: values.data }),
      sections: await appSections(),
    });
    const log = createLogger(config.log.level);
    const [{ PLATFORM_APPS }, { purgeArchive }] = await Promise.all([
      import("./platform/index.ts"),
      import("./archive-purge.ts"),
    ]);
    return await purgeArchive(
      {
        config,
        olderThanDays: Number(days),
        dryRun: values["dry-run"] === true,
        apps: PLATFORM_APPS,
        clock: systemClock,
        lockRoot: (layout) =>
          acquireInstanceLock(layout, { publicUrl: config.http.publicUrl, log, existingRoot: true }),
      },
      output,
    );
  } catch (error) {
    if (error instanceof InstanceLocked) {
      output.err(
        `atrium: ${error.message}\natrium archive purge removes archives only while no server runs on the root: ` +
          "stop it first, or set storage.archiveRetentionDays and let the server remove them hourly. " +
          "--dry-run lists them without the lock.\n",
      );
      return 1;
    }
    return reportBootProblem(error, output);
  }
}

/**
 * A signal that arrives this soon after the first is the same request, not a second one: Ctrl-C
 * on `npm start` reaches node from the terminal and again from npm, within a millisecond, and
 * counted twice it cut off every request in flight (an upload answered 499).
 */
export const REPEAT_SIGNAL_MS = 1_000;

/** What stopping on a signal needs; the CLI passes the process's, a test its own. */
export interface StopDeps {
  log: Logger;
  clock: Clock;
  exit(code: number): void;
}

/**
 * The stop a signal asks for: the first stops the server gracefully and exits 0 (1 if the
 * shutdown fails); one more, at least REPEAT_SIGNAL_MS later, cuts the drain short; one sooner is
 * the first one again and is only logged (test/unit/cli.test.ts). The first joins a stop a lost
 * lock began (`stop()`): as its `close()`, the supervisor's one SIGTERM was a second signal's and
 * cut off every request still draining.
 */
export function stopOnRequest(
  atrium: Pick<RunningAtrium, "stop" | "close">,
  deps: StopDeps,
): (reason: string) => void {
  const { log, clock, exit } = deps;
  let firstMs: number | undefined;
  return (reason) => {
    if (firstMs !== undefined) {
      // A first signal the clock reads after (stepped back since) is no repeat: ADR 0168.
      if (isWithin(clock(), firstMs, REPEAT_SIGNAL_MS)) {
        log.info({ reason }, "asked to stop again at once (the same signal, forwarded): still draining");
        return;
      }
      log.warn({ reason }, "asked again to stop: cutting off requests still in flight");
      void atrium.close();
      return;
    }
    firstMs = clock();
    log.info({ reason }, "stopping");
    exitOnceStopped(atrium.stop(), log, exit);
  };
}

/**
 * A signal stops the server gracefully and exits 0; another at least REPEAT_SIGNAL_MS later cuts the
 * drain short (`stopOnRequest`).
 * Started by npm (`npm start`, `npx atrium`), the server also stops when npm goes, through the
 * shell npx puts between them too (`npmLauncher`): a supervisor's SIGTERM to npm does not always
 * reach node through `sh -c`, and a server re-parented to PID 1 would keep serving the root as an
 * orphan (issue 10, ADR 0023). Not watched otherwise, so `nohup atrium serve &` outlives its
 * shell as asked.
 */
function stopWhenAsked(atrium: RunningAtrium, log: Logger): void {
  const stop = stopOnRequest(atrium, { log, clock: systemClock, exit: (code) => process.exit(code) });
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  if (process.env.npm_execpath === undefined) return;
  const launcher = npmLauncher(process.env);
  const watch = setInterval(() => {
    if (!launcher.gone()) return;
    clearInterval(watch);
    stop("the npm process that started this server is gone");
  }, PARENT_POLL_MS);
  watch.unref();
}
