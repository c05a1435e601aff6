import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../src/web/json-bounds.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  MCP_POST_HEADERS,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
} from "../helpers/atrium.ts";

// POST /mcp/ws_… is answered straight from Node's request event (src/http/mcp-front-door.ts,
// adr/0052). What the hono app does for every request must hold there too: these cases go to
// the front door's own checks, each with a bad input beside the good one.

const MAX_BODY_BYTES = 16 * 1024;
const captured = capturingLogger();
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ maxBodyBytes: MAX_BODY_BYTES, log: captured.log });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

const PING = { jsonrpc: "2.0", id: 7, method: "ping" };
const LEGACY = { ...MCP_POST_HEADERS, "mcp-protocol-version": "2025-11-25" };

function post(user: string, path: string, body: unknown, headers: Record<string, string> = LEGACY) {
  return instance.raw(user, "POST", path, { headers, body: JSON.stringify(body) });
}

describe("the front door's request id and log line", () => {
  it("answers with x-request-id and logs one line with it, the person and the workspace, no query", async () => {
    const response = await post("alice", `/mcp/${ws}?code=secret-code`, PING);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
    const requestId = response.headers["x-request-id"];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const line = captured.lines.find((l) => l.msg === "request" && l.requestId === requestId);
    expect(line).toMatchObject({ method: "POST", path: `/mcp/${ws}`, status: 200, workspace: ws });
    expect(line?.principal).toEqual(expect.stringMatching(/^usr_/));
    expect(JSON.stringify(line)).not.toContain("secret-code");
  });

  it("a client that goes away mid-body is logged 499 with no error line, on the front door and on hono alike", async () => {
    const paths = [`/mcp/${ws}`, `/mcp/${ws.replace("ws_", "ws%5F")}`, "/v1/workspaces"];
    const from = captured.lines.length;
    const since = () => captured.lines.slice(from);
    for (const path of paths) {
      await new Promise<void>((resolve) => {
        const req = httpRequest({
          host: "127.0.0.1",
          port: instance.atrium.port,
          method: "POST",
          path,
          headers: { ...LEGACY, [TEST_USER_HEADER]: "alice", "content-length": "1000" },
        });
        req.on("error", () => resolve());
        req.write('{"jsonrpc":"2.0",', () => {
          req.destroy();
          resolve();
        });
      });
    }
    // Each request is logged once its handler is done with it.
    const logged = () => since().filter((l) => l.msg === "request" && paths.includes(l.path as string));
    await expect.poll(() => logged().length).toBe(paths.length);
    expect(logged().map((l) => l.status)).toEqual([499, 499, 499]);
    expect(since().filter((l) => l.msg === "unhandled error")).toEqual([]);
  });

  it("a refused request is logged and carries its id too", async () => {
    const response = await post("alice", "/mcp/ws_00000000000000000000000000", PING);
    expect(response.status).toBe(404);
    const requestId = response.headers["x-request-id"];
    expect(typeof requestId).toBe("string");
    expect(
      captured.lines.some((l) => l.msg === "request" && l.requestId === requestId && l.status === 404),
    ).toBe(true);
  });
});

describe("the front door's refusals are the hono app's", () => {
  it("a stranger's workspace is the same 404 as one that does not exist", async () => {
    const stranger = await post("mallory", `/mcp/${ws}`, PING);
    const none = await post("mallory", "/mcp/ws_00000000000000000000000000", PING);
    expect(stranger.status).toBe(404);
    const body = JSON.parse(stranger.text) as { error: { code: string; message: string } };
    const noneBody = JSON.parse(none.text) as { error: { code: string; message: string } };
    expect(body.error.code).toBe(noneBody.error.code);
  });

  it("no credential is a 401 with the challenge that names this workspace's metadata", async () => {
    const response = await instance.raw(null, "POST", `/mcp/${ws}`, {
      headers: LEGACY,
      body: JSON.stringify(PING),
    });
    expect(response.status).toBe(401);
    expect(response.headers["www-authenticate"]).toContain(`resource_metadata=`);
    expect(response.headers["www-authenticate"]).toContain(ws);
  });

  it("a forged Atrium access token is refused with invalid_token", async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const forged = `${part({ alg: "ES256", typ: "at+jwt" })}.${part({ iss: instance.atrium.url, sub: "usr_x" })}.AAAA`;
    const response = await post("alice", `/mcp/${ws}`, PING, {
      ...LEGACY,
      authorization: `Bearer ${forged}`,
    });
    expect(response.status).toBe(401);
    expect(response.headers["www-authenticate"]).toContain('error="invalid_token"');
  });

  it("a foreign Origin and a foreign Host are refused with 403 before authentication", async () => {
    const origin = await instance.raw(null, "POST", `/mcp/${ws}`, {
      headers: { ...LEGACY, origin: "http://evil.example" },
      body: JSON.stringify(PING),
    });
    expect(origin.status).toBe(403);
    expect(origin.text).toMatch(/forbidden_origin/);
    const host = await instance.raw(null, "POST", `/mcp/${ws}`, {
      headers: { ...LEGACY, host: "evil.example" },
      body: JSON.stringify(PING),
    });
    expect(host.status).toBe(403);
    expect(host.text).toMatch(/forbidden_host/);
  });

  it("a body over the limit is a 413 that closes the connection, declared or chunked", async () => {
    const big = JSON.stringify({ ...PING, params: { pad: "x".repeat(MAX_BODY_BYTES) } });
    const declared = await post("alice", `/mcp/${ws}`, JSON.parse(big));
    expect(declared.status).toBe(413);
    expect(declared.headers.connection).toBe("close");
    const chunked = await chunkedPost(`/mcp/${ws}`, big);
    expect(chunked.status).toBe(413);
    expect(chunked.connection).toBe("close");
    // Under the limit, chunked, is served.
    const small = await chunkedPost(`/mcp/${ws}`, JSON.stringify(PING));
    expect(small.status).toBe(200);
  });

  it("a deactivated person is refused with 403, and served again once reactivated", async () => {
    await post("bob", `/mcp/${ws}`, PING);
    const bobId = instance.atrium.users.list().find((user) => user.displayName === "bob")?.id;
    expect(bobId).toBeDefined();
    const off = await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/deactivate`);
    expect(off.status).toBe(200);
    const refused = await post("bob", `/mcp/${ws}`, PING);
    expect(refused.status).toBe(403);
    expect(refused.text).toMatch(/deactivated/);
    await instance.rest("orgadmin-olga", "POST", `/v1/users/${bobId}/reactivate`);
    expect((await post("bob", `/mcp/${ws}`, PING)).status).toBe(404);
  });

  it("a body nested deeper than the bound is a parse error before it is parsed, on the front door and on hono alike", async () => {
    const call = (depth: number) =>
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"files__list","arguments":{"x":${"[".repeat(depth)}${"]".repeat(depth)}}}}`;
    for (const path of [`/mcp/${ws}`, `/mcp/${ws.replace("ws_", "ws%5F")}`]) {
      const response = await instance.raw("alice", "POST", path, { headers: LEGACY, body: call(1000) });
      expect(response.status, path).toBe(400);
      expect(JSON.parse(response.text), path).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32700,
          message: `Parse error: the request body nests deeper than ${MAX_JSON_DEPTH} arrays or objects`,
        },
      });
    }
    // Deep, but within the bound with the envelope's own three levels: served.
    const within = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: LEGACY,
      body: call(MAX_JSON_DEPTH - 3),
    });
    expect(within.status).toBe(200);
  });

  it("a body holding more arrays and objects than the bound is a parse error, however shallow", async ({
    onTestFinished,
  }) => {
    // The default body limit: this body is larger than the small one the other cases use.
    const roomy = await startTestAtrium();
    onTestFinished(() => roomy.stop());
    const roomyWs = await bootstrapWorkspace(roomy, "alice");
    const call = (containers: number) =>
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"files__list","arguments":{"x":[${Array.from({ length: containers }, () => "[]").join(",")}]}}}`;
    const response = await roomy.raw("alice", "POST", `/mcp/${roomyWs}`, {
      headers: LEGACY,
      body: call(MAX_JSON_CONTAINERS),
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32700,
        message: `Parse error: the request body holds more than ${MAX_JSON_CONTAINERS} arrays and objects`,
      },
    });
    // The envelope's four and a thousand more: served (files__list refuses the unknown argument).
    const within = await instance.raw("alice", "POST", `/mcp/${ws}`, { headers: LEGACY, body: call(1_000) });
    expect(within.status).toBe(200);
  });

  it("a body that is not UTF-8 is a parse error, stored nowhere, on the front door and on hono alike", async () => {
    const write = (name: string) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "files__write", arguments: { name, text: "x" } },
      });
    // The name's last two bytes are \xff\xfe, which no UTF-8 text holds; decoded leniently they
    // were stored as U+FFFD U+FFFD, a name the client never sent.
    const [before, after] = write("bad-#.txt").split("#") as [string, string];
    const body = Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe]), Buffer.from(after)]);
    for (const path of [`/mcp/${ws}`, `/mcp/${ws.replace("ws_", "ws%5F")}`]) {
      const response = await instance.raw("alice", "POST", path, { headers: LEGACY, body });
      expect(response.status, path).toBe(400);
      expect(JSON.parse(response.text), path).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: "Parse error: the request body is not UTF-8" },
      });
    }
    const listed = await post("alice", `/mcp/${ws}`, {
      jsonrpc: "2.0",
      id: 6,
      method: "tools/call",
      params: { name: "files__list", arguments: {} },
    });
    expect(listed.text).not.toContain("bad-");
    expect((await post("alice", `/mcp/${ws}`, JSON.parse(write("good-é.txt")))).status).toBe(200);
  });

  it("anything but POST, and a path with an escape, still reaches the hono routes", async () => {
    expect((await instance.raw("alice", "GET", `/mcp/${ws}`)).status).toBe(405);
    const escaped = await post("alice", `/mcp/${ws.replace("ws_", "ws%5F")}`, PING);
    expect(escaped.status).toBe(200);
  });
});

describe("the 2025 era's HTTP half without the SDK's web transport", () => {
  it("refuses an Accept without both types (406) and a body that is not JSON by type (415)", async () => {
    const accept = await post("alice", `/mcp/${ws}`, PING, { ...LEGACY, accept: "application/json" });
    expect(accept.status).toBe(406);
    const type = await post("alice", `/mcp/${ws}`, PING, { ...LEGACY, "content-type": "text/plain" });
    expect(type.status).toBe(415);
  });

  it("answers a notification-only POST with 202 and an empty body", async () => {
    const response = await post("alice", `/mcp/${ws}`, {
      jsonrpc: "2.0",
      method: "notifications/initialized",
    });
    expect(response.status).toBe(202);
    expect(response.text).toBe("");
  });

  it("answers a batch with an array in request order, and refuses one over 100 messages", async () => {
    const batch = [
      { jsonrpc: "2.0", id: "b", method: "ping" },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: "a", method: "ping" },
    ];
    const response = await post("alice", `/mcp/${ws}`, batch);
    expect(response.status).toBe(200);
    expect((JSON.parse(response.text) as Array<{ id: string }>).map((m) => m.id)).toEqual(["b", "a"]);
    // A batch of one is still a batch, answered with an array; one of notifications alone, with
    // nothing (202).
    const one = await post("alice", `/mcp/${ws}`, [{ jsonrpc: "2.0", id: 1, method: "ping" }]);
    expect(JSON.parse(one.text)).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }]);
    const notified = await post("alice", `/mcp/${ws}`, [
      { jsonrpc: "2.0", method: "notifications/initialized" },
    ]);
    expect([notified.status, notified.text]).toEqual([202, ""]);
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "ping" }));
    expect((await post("alice", `/mcp/${ws}`, tooMany)).status).toBe(400);
  });

  it("refuses a batch that repeats a request id, saying which, and runs none of it", async () => {
    const batch = [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "x.txt", text: "x" } },
      },
    ];
    const response = await post("alice", `/mcp/${ws}`, batch);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toEqual({
      jsonrpc: "2.0",
      error: {
        code: -32600,
        message: "Invalid Request: the batch repeats request id 1; give each request its own id",
      },
      id: null,
    });
    const listed = await post("alice", `/mcp/${ws}`, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "files__list", arguments: {} },
    });
    expect(listed.text).not.toContain("x.txt");
    // The same ids as a string and a number are two ids.
    const distinct = await post("alice", `/mcp/${ws}`, [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: "1", method: "ping" },
    ]);
    expect((JSON.parse(distinct.text) as Array<{ id: unknown }>).map((m) => m.id)).toEqual([1, "1"]);
  });

  it("refuses a batch holding initialize, saying it goes alone, and a message the schema refuses", async () => {
    const init = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } },
    });
    const alone =
      "Invalid Request: initialize must be sent alone, not in a batch; send it as its own POST, then the other messages";
    for (const batch of [
      [init(1), init(2)],
      [init(1), { jsonrpc: "2.0", id: 2, method: "ping" }],
    ]) {
      const refused = await post("alice", `/mcp/${ws}`, batch);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text)).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: alone },
      });
    }
    const invalid = await post("alice", `/mcp/${ws}`, [{ jsonrpc: "1.0", id: 1, method: "ping" }]);
    expect(invalid.status).toBe(400);
  });
});

/** A POST whose body is sent chunked (no Content-Length), read with Node's own client. */
function chunkedPost(
  path: string,
  body: string,
): Promise<{ status: number; connection: string | undefined }> {
  const url = new URL(path, instance.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: "POST", headers: { ...LEGACY, "x-test-user": "alice", "transfer-encoding": "chunked" } },
      (response) => {
        response.resume();
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, connection: response.headers.connection }),
        );
      },
    );
    request.on("error", reject);
    for (let i = 0; i < body.length; i += 4096) request.write(body.slice(i, i + 4096));
    request.end();
  });
}
