import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// Small limits so that a body well over them is still cheap to send over loopback.
const MAX_UPLOAD_BYTES = 64 * 1024;
const MAX_BODY_BYTES = 32 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ maxUploadBytes: MAX_UPLOAD_BYTES, maxBodyBytes: MAX_BODY_BYTES });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

interface Target {
  label: string;
  path: () => string;
  headers: Record<string, string>;
}

const TARGETS: Target[] = [
  { label: "a file upload", path: () => `/v1/workspaces/${ws}/files?name=big.bin`, headers: {} },
  {
    label: "a JSON REST body",
    path: () => "/v1/workspaces",
    headers: { "content-type": "application/json" },
  },
  { label: "an MCP body", path: () => `/mcp/${ws}`, headers: { ...MCP_POST_HEADERS } },
];

/**
 * The client that loses the answer to a reset: it writes the whole request, declared length
 * and real body, before it reads a byte (as many HTTP/1.1 clients do), so the answer waits in
 * its receive buffer while the server decides what to do with the rest of the body.
 */
function writeAllThenRead(target: Target, bodyBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port: instance.atrium.port });
    socket.pause();
    let received = "";
    let failure: Error | undefined;
    socket.on("error", (error) => {
      failure ??= error;
    });
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    socket.on("close", () =>
      received !== "" ? resolve(received) : reject(failure ?? new Error("no answer")),
    );
    const head = [
      `POST ${target.path()} HTTP/1.1`,
      "host: 127.0.0.1",
      "x-test-user: alice",
      `content-length: ${bodyBytes}`,
      ...Object.entries(target.headers).map(([name, value]) => `${name}: ${value}`),
      "",
      "",
    ].join("\r\n");
    socket.write(head);
    let sent = 0;
    const writeMore = (): void => {
      while (sent < bodyBytes) {
        const size = Math.min(CHUNK.length, bodyBytes - sent);
        sent += size;
        if (!socket.write(CHUNK.subarray(0, size))) {
          socket.once("drain", writeMore);
          return;
        }
      }
      // Everything is written (or the server stopped reading and a write failed): now read.
      socket.resume();
    };
    socket.once("error", () => socket.resume());
    writeMore();
  });
}

/** The same through node:http, which reads while it writes; a socket error after the answer is fine. */
function httpClientPost(target: Target, bodyBytes: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: instance.atrium.port,
        method: "POST",
        path: target.path(),
        headers: { "x-test-user": "alice", "content-length": String(bodyBytes), ...target.headers },
      },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString("utf8");
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("socket", (socket) => socket.on("error", () => undefined));
    req.on("error", reject);
    let sent = 0;
    const writeMore = (): void => {
      while (sent < bodyBytes) {
        const size = Math.min(CHUNK.length, bodyBytes - sent);
        sent += size;
        if (!req.write(CHUNK.subarray(0, size))) {
          req.once("drain", writeMore);
          return;
        }
      }
      req.end();
    };
    writeMore();
  });
}

describe("an over-limit body with a declared Content-Length", () => {
  describe.each(TARGETS)("to $label", (target) => {
    it("is answered 413 and the client reads it, even one that writes the whole body first (20 tries)", async () => {
      for (let i = 0; i < 20; i++) {
        const answer = await writeAllThenRead(target, 4 * 1024 * 1024);
        expect(answer).toMatch(/^HTTP\/1\.1 413 /);
        expect(answer.toLowerCase()).toContain("connection: close");
        expect(answer).toContain('"payload_too_large"');
      }
    });

    it("is answered 413 to a node:http client every time (20 tries)", async () => {
      for (let i = 0; i < 20; i++) {
        const { status, body } = await httpClientPost(target, 2 * 1024 * 1024);
        expect(status).toBe(413);
        expect(JSON.parse(body)).toMatchObject({ error: { code: "payload_too_large" } });
      }
    });
  });

  it("the 413 comes before authentication: no credential still gets 413, not 401", async () => {
    const response = await instance.raw(null, "POST", "/v1/workspaces", {
      headers: { "content-type": "application/json", "content-length": String(MAX_BODY_BYTES + 1) },
      body: "x".repeat(MAX_BODY_BYTES + 1),
    });
    expect(response.status).toBe(413);
  });

  it("a body at the limit is still read and answered", async () => {
    // A skill's text carries the bulk: a body holds only the fields its route reads (ADR 0095).
    const body = JSON.stringify({
      name: "at-limit",
      description: "d",
      body: "p".repeat(MAX_BODY_BYTES - 200),
    });
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, body, {
      "content-type": "application/json",
    });
    expect(response.status).toBe(201);
  });
});
