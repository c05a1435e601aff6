import { parseArgs } from "node:util";

export interface ServerOptions {
  port: number;
  dataDir: string;
  /** A JSON file of tool definitions (a tools/list result's `tools`) to serve at /mcp/list. */
  toolsFile?: string;
}

// The bench parent picks the port and the fixture dir, so both arrive as flags rather than being chosen here.
export function readServerOptions(argv: string[] = process.argv.slice(2)): ServerOptions {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: "string" }, data: { type: "string" }, tools: { type: "string" } },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65_535)
    throw new Error(`--port must be a TCP port, got ${values.port}`);
  if (!values.data) throw new Error("--data <dir> is required");
  return { port, dataDir: values.data, ...(values.tools ? { toolsFile: values.tools } : {}) };
}
