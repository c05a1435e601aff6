import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
} from "../helpers/atrium.ts";
import { HOLD_HEADER, heldSignIn } from "../helpers/held-sign-in.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";
import { mcpRequest } from "../helpers/mcp-request.ts";

// A client that goes away while its request is still being admitted (here: held in sign-in) gets
// no call made for it, and its request ends and is logged. The endpoint hears of a client leaving
// from the moment it takes a request; a close that came before was never heard, and the call ran
// for nobody (the hono route), or the front door waited forever for a body already dropped.

const signIn = heldSignIn();
const calls: string[] = [];

const countApp: PlatformApp = {
  name: "count",
  start() {
    const tools = new AppTools("count");
    tools.registerTool(
      "call",
      { description: "Remembers that it was called.", inputSchema: platformInput({}), annotations: {} },
      async () => {
        calls.push("called");
        return { content: [{ type: "text", text: "counted" }] };
      },
    );
    return { tools };
  },
};

const captured = capturingLogger();
let t: TestAtrium;
let ws: string;

beforeAll(async () => {
  t = await startTestAtrium({
    apps: [...PLATFORM_APPS, countApp],
    identityProvider: signIn.provider,
    log: captured.log,
  });
  ws = await bootstrapWorkspace(t, "alice");
});

afterAll(async () => {
  signIn.release();
  await t?.stop();
});

const closedRequests = () => captured.lines.filter((line) => line.msg === "request" && line.status === 499);

describe("a client gone before its call is dispatched", () => {
  // The front door serves a plain path; one with an escape in it goes to the hono route.
  const paths = {
    "front door": () => `/mcp/${ws}`,
    "hono route": () => `/mcp/ws_%${ws.charCodeAt(3).toString(16)}${ws.slice(4)}`,
  };
  for (const era of MCP_ERAS) {
    for (const [door, path] of Object.entries(paths)) {
      it(`gets no call made for it (${door}, ${era})`, async () => {
        signIn.reset();
        calls.length = 0;
        const before = closedRequests().length;
        const { headers, body } = mcpRequest(era, {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "count__call", arguments: {} },
        });
        const text = JSON.stringify(body);
        const head = { ...headers, host: "127.0.0.1", [TEST_USER_HEADER]: "alice", [HOLD_HEADER]: "1" };
        const socket = connect(Number(new URL(t.url).port), "127.0.0.1");
        socket.on("error", () => undefined);
        socket.write(
          `POST ${path()} HTTP/1.1\r\n${Object.entries({
            ...head,
            "content-length": String(Buffer.byteLength(text)),
          })
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join("")}\r\n${text}`,
        );
        await signIn.reached();
        socket.destroy();
        // The close reaches the server's socket in a turn or two of its event loop.
        await new Promise((resolve) => setTimeout(resolve, 100));
        signIn.release();
        // Logged as every request is, 499, once its handler has ended: a handler that waited for
        // a body its client had taken away never ended.
        await expect.poll(() => closedRequests().length, { timeout: 10_000 }).toBe(before + 1);
        expect(calls).toEqual([]);
      });
    }
  }
});
