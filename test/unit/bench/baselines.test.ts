import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { releaseAll } from "../../../bench/lib/cleanup.ts";
import { createMetadataFixture, type MetadataFixture } from "../../../bench/lib/metadata-fixture.ts";
import { preflight } from "../../../bench/lib/preflight.ts";
import { rpcRequest } from "../../../bench/lib/rpc-request.ts";
import { startBenchServer } from "../../../bench/lib/start-bench-server.ts";
import { makeTempDir } from "../../../bench/lib/temp-dir.ts";

// The baselines the new rows compare against are honest: the bare SDK lists exactly the tools
// it is given (Atrium's, in the bench), in both eras; the plain hono ping route parses the
// request and answers a real JSON-RPC response carrying its id.

const TOOLS = [
  {
    name: "files__info",
    description: "Metadata of one file",
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    annotations: { readOnlyHint: true },
  },
  {
    name: "skills__create",
    description: "Create a skill",
    inputSchema: {
      type: "object",
      properties: {
        name: { type: "string" },
        body: { type: "string" },
        scope: { enum: ["workspace", "user"] },
      },
      required: ["name", "body"],
    },
  },
];

let fixture: MetadataFixture;
let bareBase: string;
let honoBase: string;

beforeAll(async () => {
  fixture = await createMetadataFixture();
  const dir = await makeTempDir("atrium-bench-tools-test");
  const toolsFile = join(dir.path, "tools.json");
  await writeFile(toolsFile, JSON.stringify(TOOLS));
  bareBase = (await startBenchServer("bare-sdk", "info", fixture, toolsFile)).base;
  honoBase = (await startBenchServer("plain-hono", "info", fixture)).base;
});

afterAll(async () => {
  await releaseAll();
});

describe("the bench's baselines", () => {
  it.each(["2025-11-25", "2026-07-28"] as const)(
    "the bare SDK lists the tools it was given in %s",
    async (era) => {
      const url = `${bareBase}/mcp/list`;
      const result = (await preflight(url, rpcRequest({ url, method: "tools/list" }, era), "list")) as {
        tools: Array<{ name: string; inputSchema: { required?: string[] } }>;
      };
      expect(result.tools.map((tool) => tool.name)).toEqual(TOOLS.map((tool) => tool.name));
      expect(result.tools[1]?.inputSchema.required).toEqual(["name", "body"]);
    },
  );

  it("the plain hono ping route answers JSON-RPC with the request's id", async () => {
    const response = await fetch(`${honoBase}/ping`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 42, method: "ping" }),
    });
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 42, result: {} });
  });

  it("the plain hono ping route refuses a body that is not JSON", async () => {
    const response = await fetch(`${honoBase}/ping`, { method: "POST", body: "not json" });
    expect(response.ok).toBe(false);
  });
});
