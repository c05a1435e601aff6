import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  MCP_POST_HEADERS,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
} from "../helpers/atrium.ts";

// http.idleTimeoutSeconds: a connection that moves no bytes either way for that long, a request
// open on it, is closed by the server — a client that stops sending its body, or stops reading
// its answer, is not held (with what it holds) for good. A connection that keeps moving is not.

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ idleTimeoutSeconds: 1 });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

function open(): Socket {
  const socket = connect({ host: "127.0.0.1", port: instance.atrium.port });
  socket.on("error", () => undefined);
  return socket;
}

/** Resolves with how the socket ended: closed by the server, or still open after `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<"closed" | "open"> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("open"), ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve("closed");
    });
  });
}

describe("an idle connection", () => {
  it("is closed once a request's body stops arriving for the idle timeout", async () => {
    const socket = open();
    const head = Object.entries({
      ...MCP_POST_HEADERS,
      [TEST_USER_HEADER]: "alice",
      host: "127.0.0.1",
      "content-length": "100",
    })
      .map(([name, value]) => `${name}: ${value}`)
      .join("\r\n");
    socket.write(`POST /mcp/${ws} HTTP/1.1\r\n${head}\r\n\r\n{"jsonrpc":`);
    socket.resume();
    expect(await closedWithin(socket, 10_000)).toBe("closed");
  });

  it("stays open while bytes keep moving, longer than the idle timeout in all", async () => {
    const socket = open();
    socket.resume();
    const ended = closedWithin(socket, 3_500);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    socket.write(
      `POST /mcp/${ws} HTTP/1.1\r\nhost: 127.0.0.1\r\n${TEST_USER_HEADER}: alice\r\ncontent-type: application/json\r\n` +
        `accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n` +
        `content-length: ${body.length}\r\n\r\n`,
    );
    // One byte every 400 ms: never a second of silence, three seconds in all.
    for (const byte of body.slice(0, 8)) {
      socket.write(byte);
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    expect(await ended).toBe("open");
    socket.destroy();
  });
});

describe("a request whose body is still arriving at http.requestTimeoutSeconds", () => {
  let slow: TestAtrium;
  let slowWs: string;
  beforeAll(async () => {
    slow = await startTestAtrium({ idleTimeoutSeconds: 60, requestTimeoutSeconds: 2 });
    slowWs = await bootstrapWorkspace(slow, "alice");
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it("is answered 408 and closed, however steadily its bytes still move", async () => {
    const socket = connect({ host: "127.0.0.1", port: slow.atrium.port });
    socket.on("error", () => undefined);
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString();
    });
    const ended = closedWithin(socket, 10_000);
    socket.write(
      `POST /mcp/${slowWs} HTTP/1.1\r\nhost: 127.0.0.1\r\n${TEST_USER_HEADER}: alice\r\ncontent-type: application/json\r\n` +
        "accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n",
    );
    // A byte every 300 ms, never idle, for longer than the request timeout.
    const trickle = setInterval(() => socket.writable && socket.write(" "), 300);
    try {
      expect(await ended).toBe("closed");
    } finally {
      clearInterval(trickle);
    }
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("does not touch a request that was whole in time, however long its answer takes to read", async () => {
    const response = await slow.raw("alice", "POST", `/mcp/${slowWs}`, {
      headers: { ...MCP_POST_HEADERS, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(response.status).toBe(200);
  });
});
