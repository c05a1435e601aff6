import { parseArgs } from "node:util";
import { BootError } from "./errors.ts";
import { workspaceMcpUrl } from "./http/urls.ts";
import { DEV_PRINCIPAL } from "./identity/providers/dev.ts";
import { loadInstance } from "./instance/load.ts";
import { startAtrium } from "./server.ts";

const USAGE = `Usage: atrium serve [--instance PATH] [--port N] [--data DIR]

  --instance PATH  the instance file (default ./instance.json)
  --port N         listen on port N instead of http.port
  --data DIR       keep all state in DIR instead of storage.root
`;

/** The only entry point. Returns the process exit code; a running server keeps the process alive. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== "serve") {
    process.stderr.write(
      command === undefined || command === "--help" ? USAGE : `Unknown command "${command}".\n${USAGE}`,
    );
    return command === "--help" ? 0 : 2;
  }
  let values: { instance?: string; port?: string; data?: string };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { instance: { type: "string" }, port: { type: "string" }, data: { type: "string" } },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    process.stderr.write(`--port must be a whole number from 0 to 65535, not "${values.port}".\n`);
    return 2;
  }
  try {
    const config = await loadInstance(values.instance ?? "instance.json", {
      ...(port === undefined ? {} : { port }),
      ...(values.data === undefined ? {} : { dataRoot: values.data }),
    });
    const atrium = await startAtrium(config);
    process.stdout.write(
      `Atrium is listening on ${atrium.url} (identity provider: ${config.auth.adapter})\n`,
    );
    if (config.auth.adapter === "dev") {
      const [first] = await atrium.firstWorkspace.ensure(DEV_PRINCIPAL);
      if (first)
        process.stdout.write(`MCP URL of "${first.name}": ${workspaceMcpUrl(atrium.url, first.id)}\n`);
    } else {
      process.stdout.write(`Sign in at ${atrium.url}/auth/login; GET /v1/bootstrap lists your MCP URLs.\n`);
    }
    const stop = () => void atrium.close().then(() => process.exit(0));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    return 0;
  } catch (error) {
    if (error instanceof BootError) {
      process.stderr.write(`atrium: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
