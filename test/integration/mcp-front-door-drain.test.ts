import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { platformInput } from "../../src/platform/platform-tool.ts";
import { bootstrapWorkspace, startTestAtrium, TEST_USER_HEADER, type TestAtrium } from "../helpers/atrium.ts";

import { mcpRequest } from "../helpers/mcp-request.ts";

// A graceful stop lets an MCP request the front door is answering (adr/0052) finish with its
// real answer, marked `Connection: close` so its client sends nothing more on that connection,
// as the hono app's answers are (src/http/drain.ts). The request is held in a tool until the
// drain has begun, so nothing here waits on time.

interface Held {
  instance: TestAtrium;
  ws: string;
  running: Promise<void>;
  release: () => void;
  /** Settles once the tool has reported its progress and answered. */
  answered: Promise<void>;
}

/** An Atrium whose `hold__until_released` reports progress once released, if asked, then answers. */
async function holding(options: { drainSeconds?: number } = {}): Promise<Held> {
  let started!: () => void;
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const holdApp: PlatformApp = {
    name: "hold",
    start() {
      const tools = new AppTools("hold");
      tools.registerTool(
        "until_released",
        { description: "Answer once the test releases it.", inputSchema: platformInput({}), annotations: {} },
        async (_caller, _args, call) => {
          started();
          await released;
          try {
            await call.progress?.({ progress: 1, total: 1 });
            return { content: [{ type: "text", text: "released" }] };
          } finally {
            answer();
          }
        },
      );
      return { tools };
    },
  };
  const instance = await startTestAtrium({
    apps: [...PLATFORM_APPS, holdApp],
    ...(options.drainSeconds === undefined
      ? {}
      : {
          sections: {
            http: {
              host: "127.0.0.1",
              port: 0,
              publicUrl: "http://127.0.0.1:8787",
              drainSeconds: options.drainSeconds,
            },
          },
        }),
  });
  return { instance, ws: await bootstrapWorkspace(instance, "alice"), running, release, answered };
}

/**
 * Requests sent one after another on one TCP connection, each answer read whole (its length, or a
 * chunked body's last chunk); a connection the server has ended fails the next with "closed
 * without an answer".
 */
function oneConnection(port: number) {
  const socket = connect(port, "127.0.0.1");
  let received = "";
  let ended = false;
  let waiting: (() => void) | undefined;
  socket.setEncoding("utf8");
  socket.on("data", (text: string) => {
    received += text;
    waiting?.();
  });
  const end = () => {
    ended = true;
    waiting?.();
  };
  socket.on("end", end);
  socket.on("error", end);
  socket.on("close", end);
  const complete = (text: string): boolean => {
    const split = text.indexOf("\r\n\r\n");
    if (split < 0) return false;
    const length = /content-length: (\d+)/i.exec(text.slice(0, split))?.[1];
    if (length !== undefined) return Buffer.byteLength(text.slice(split + 4)) >= Number(length);
    return text.endsWith("\r\n0\r\n\r\n");
  };
  return {
    send(method: string, path: string, headers: Record<string, string>, body: string): Promise<string> {
      received = "";
      if (!ended) {
        const lines = Object.entries({
          host: "127.0.0.1",
          "content-length": String(Buffer.byteLength(body)),
          ...headers,
        });
        socket.write(
          `${method} ${path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n${body}`,
        );
      }
      return new Promise((resolve, reject) => {
        const check = () => {
          if (complete(received)) resolve(received);
          else if (ended) reject(new Error("closed without an answer"));
        };
        waiting = check;
        check();
      });
    },
  };
}

const refused = (url: string) =>
  fetch(`${url}/v1/health`).then(
    () => false,
    () => true,
  );

describe("a graceful stop and the MCP front door", () => {
  // The front door serves a plain path; a path with an escape in it goes to the hono route.
  const routes = {
    "front door": (ws: string) => `/mcp/${ws}`,
    "hono route": (ws: string) => `/mcp/ws_%${ws.charCodeAt(3).toString(16)}${ws.slice(4)}`,
  } as const;
  it.each(
    (["front door", "hono route"] as const).flatMap((route) =>
      (
        [
          ["a JSON answer", "2025-11-25", undefined],
          ["a streamed answer (progress, 2025)", "2025-11-25", "p1"],
          ["a streamed answer (progress, 2026)", "2026-07-28", "p1"],
        ] as const
      ).map(([label, era, token]) => [label, route, era, token] as const),
    ),
  )(
    "%s in flight when the drain begins (%s) is the real answer, and its connection ends with it",
    async (_label, route, era, progressToken) => {
      const { instance, ws, running, release } = await holding();
      try {
        const { headers, body } = mcpRequest(era, {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: {
            name: "hold__until_released",
            arguments: {},
            ...(progressToken === undefined ? {} : { _meta: { progressToken } }),
          },
        });
        const connection = oneConnection(Number(new URL(instance.url).port));
        const answering = connection.send(
          "POST",
          routes[route](ws),
          { ...headers, [TEST_USER_HEADER]: "alice" },
          JSON.stringify(body),
        );
        await running;
        const closing = instance.close();
        await expect.poll(() => refused(instance.url), { timeout: 30_000 }).toBe(true);
        release();
        const answer = await answering;
        expect(answer).toContain("200 OK");
        expect(answer).toContain('"text":"released"');
        if (progressToken !== undefined) expect(answer).toContain("notifications/progress");
        // Its connection ends with it. A streamed answer said keep-alive, from the SDK's own headers
        // or from before the drain, and its connection went on serving requests during the stop,
        // holding it until Node's keep-alive timeout.
        expect(
          await connection.send("GET", "/v1/health", {}, "").catch((error: Error) => error.message),
        ).toBe("closed without an answer");
        await closing;
      } finally {
        release();
        await instance.stop();
      }
    },
  );

  it.each(["2025-11-25", "2026-07-28"] as const)(
    "a progress report a tool makes after the stop closed its call's connection is dropped (%s)",
    async (era) => {
      const rejections: unknown[] = [];
      const unhandled = (reason: unknown) => rejections.push(reason);
      process.on("unhandledRejection", unhandled);
      const { instance, ws, running, release, answered } = await holding({ drainSeconds: 0 });
      try {
        const { headers, body } = mcpRequest(era, {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "hold__until_released", arguments: {}, _meta: { progressToken: "p1" } },
        });
        const connection = oneConnection(Number(new URL(instance.url).port));
        connection
          .send("POST", `/mcp/${ws}`, { ...headers, [TEST_USER_HEADER]: "alice" }, JSON.stringify(body))
          .catch(() => undefined);
        await running;
        // No drain: the call's connection is cut and the MCP endpoint closed while the tool runs on.
        await instance.close();
        release();
        await answered;
        await new Promise((resolve) => setImmediate(resolve));
        // A rejection of the report nobody handles would end a process run with Node's defaults.
        expect(rejections).toEqual([]);
      } finally {
        process.off("unhandledRejection", unhandled);
        release();
        await instance.stop();
      }
    },
  );
});
