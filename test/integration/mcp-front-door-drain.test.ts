import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// A graceful stop lets an MCP request the front door is answering (adr/0052) finish with its
// real answer, marked `Connection: close` so its client sends nothing more on that connection,
// as the hono app's answers are (src/http/drain.ts). The request is held in a tool until the
// drain has begun, so nothing here waits on time.

let started: (() => void) | undefined;
let release: (() => void) | undefined;
const running = new Promise<void>((resolve) => {
  started = resolve;
});

const holdApp: PlatformApp = {
  name: "hold",
  start() {
    const tools = new AppTools("hold");
    tools.registerTool(
      "until_released",
      { description: "Answer once the test releases it.", inputSchema: platformInput({}), annotations: {} },
      async () => {
        await new Promise<void>((resolve) => {
          release = resolve;
          started?.();
        });
        return { content: [{ type: "text", text: "released" }] };
      },
    );
    return { tools };
  },
};

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, holdApp] });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  release?.();
  await instance?.stop();
});

const refused = (url: string) =>
  fetch(`${url}/v1/health`).then(
    () => false,
    () => true,
  );

describe("a graceful stop and the MCP front door", () => {
  it("an MCP call in flight when the drain begins gets its real answer with Connection: close", async () => {
    const call = instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: { ...MCP_POST_HEADERS, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "hold__until_released", arguments: {} },
      }),
    });
    await running;
    const closing = instance.close();
    await expect.poll(() => refused(instance.url), { timeout: 30_000 }).toBe(true);
    release?.();
    const answer = await call;
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe("close");
    expect(JSON.parse(answer.text)).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { content: [{ type: "text", text: "released" }] },
    });
    await closing;
  });
});
