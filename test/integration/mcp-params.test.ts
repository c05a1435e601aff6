import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

/** One raw JSON-RPC request over real HTTP, `params` spliced in as raw JSON text. */
async function rpc(
  method: string,
  paramsJson?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const params = paramsJson === undefined ? "" : `,"params":${paramsJson}`;
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
    headers: { ...MCP_POST_HEADERS },
    body: `{"jsonrpc":"2.0","id":7,"method":"${method}"${params}}`,
  });
  return { status: response.status, body: JSON.parse(response.text) as Record<string, unknown> };
}

describe("malformed params are -32602 with a message naming the field", () => {
  it.each([
    [
      "params whose only key is __proto__",
      "tools/call",
      '{"__proto__":{"name":"files__list"}}',
      /params\.name/,
    ],
    ["an array for params", "tools/call", '["files__list"]', /params must be a JSON object.*not an array/],
    ["a string for params", "tools/list", '"x"', /params must be a JSON object.*not a string/],
    ["null for params", "ping", "null", /params must be a JSON object.*not null/],
    ["a number for the tool name", "tools/call", '{"name":5}', /params\.name: .*expected string/],
    [
      "an array for the tool arguments",
      "tools/call",
      '{"name":"files__list","arguments":[1]}',
      /params\.arguments/,
    ],
    ["an array for _meta", "tools/call", '{"name":"files__list","_meta":[]}', /params\._meta/],
    ["a number for the list cursor", "tools/list", '{"cursor":5}', /params\.cursor/],
    ["initialize without its fields", "initialize", '{"__proto__":{}}', /params\.protocolVersion/],
    ["an unknown log level", "logging/setLevel", '{"level":"loud"}', /params\.level/],
    ["a resource read without a uri", "resources/read", '{"__proto__":{"uri":"skill://x/y"}}', /params\.uri/],
  ])("%s", async (_label, method, params, names) => {
    const { status, body } = await rpc(method, params);
    expect(status).toBe(200);
    expect(body.id).toBe(7);
    const error = body.error as { code: number; message: string };
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(new RegExp(`^Invalid params for ${method.replace("/", "\\/")}: `));
    expect(error.message).toMatch(names);
    // One line, not zod's JSON dump of issues.
    expect(error.message).not.toMatch(/\n|\[\s*\{|"code"/);
  });

  it("a key named __proto__ next to valid params changes nothing", async () => {
    const { body } = await rpc("tools/call", '{"name":"files__list","__proto__":{"name":"files__delete"}}');
    expect(body.error).toBeUndefined();
    expect((body.result as { structuredContent: unknown }).structuredContent).toEqual({ files: [] });
  });

  it("well-formed params are still answered", async () => {
    const { body } = await rpc("tools/list", "{}");
    expect(Array.isArray((body.result as { tools: unknown[] }).tools)).toBe(true);
  });

  it("a JSON body that is not JSON-RPC at all is -32600 Invalid Request", async () => {
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: { ...MCP_POST_HEADERS },
      body: '{"jsonrpc":"1.0","id":7,"method":"ping"}',
    });
    expect(response.status).toBe(400);
    const error = (JSON.parse(response.text) as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32600);
    expect(error.message).toMatch(/not a valid JSON-RPC message/);
  });
});

describe("request ids an answer cannot repeat exactly, and batches over the cap", () => {
  const ENVELOPE =
    '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}';
  const ERAS = {
    "2025-11-25": { headers: { "mcp-protocol-version": "2025-11-25" }, params: "{}" },
    "2026-07-28": {
      headers: { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" },
      params: `{${ENVELOPE}}`,
    },
  };

  it.for(Object.entries(ERAS))(
    "an id past ±(2^53 − 1), or not an integer, is refused with id null and why (%s)",
    async ([, era]) => {
      // JSON.parse reads 9007199254740993 as …992: echoing it would name another request.
      for (const id of ["9007199254740993", "-9007199254740993", "12345678901234567890", "1.5"]) {
        const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
          headers: { ...MCP_POST_HEADERS, ...era.headers },
          body: `{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":${era.params}}`,
        });
        expect(response.status, id).toBe(400);
        expect(JSON.parse(response.text), id).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: expect.stringContaining("a request id is a string or an integer") },
        });
      }
      // The largest safe integer and a string of any length are answered with the id as sent.
      for (const id of ["9007199254740991", '"9007199254740993"']) {
        const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
          headers: { ...MCP_POST_HEADERS, ...era.headers },
          body: `{"jsonrpc":"2.0","id":${id},"method":"tools/list","params":${era.params}}`,
        });
        expect(response.status, id).toBe(200);
        expect(response.text, id).toContain(`"id":${id}`);
      }
    },
  );

  it.for(Object.entries(ERAS))(
    "a batch over 100 messages is refused before any message in it is read (%s)",
    async ([, era]) => {
      const batch = (count: number) =>
        `[${Array.from({ length: count }, (_, i) => `{"jsonrpc":"2.0","id":${i},"result":{}}`).join(",")}]`;
      // Under either header the cap answers first: the classifier, which reads every message,
      // would have answered a 2026-07-28 batch otherwise.
      for (const count of [101, 30_000]) {
        const refused = await instance.raw("alice", "POST", `/mcp/${ws}`, {
          headers: { ...MCP_POST_HEADERS, ...era.headers },
          body: batch(count),
        });
        expect(refused.status, String(count)).toBe(400);
        expect(JSON.parse(refused.text), String(count)).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: "Invalid Request: Batch must not exceed 100 messages" },
        });
      }
    },
  );

  it("a batch of 100 responses posted by a client is taken and answered with nothing (202)", async () => {
    const batch = `[${Array.from({ length: 100 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"result":{}}`).join(",")}]`;
    const taken = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: { ...MCP_POST_HEADERS },
      body: batch,
    });
    expect(taken.status).toBe(202);
  });
});

describe("tool arguments", () => {
  it.each([
    [
      "a misspelt field",
      '{"name":"tasks__create","arguments":{"name":"nightly","action":{"tool":"files__list"},"schedule":{"everySeconds":3600}}}',
      /Unrecognized key.*"schedule"/,
    ],
    [
      "a field of the action it does not have",
      '{"name":"tasks__create","arguments":{"name":"x","action":{"tool":"files__list","args":{}}}}',
      /Unrecognized key.*"args".* at action/,
    ],
    [
      "a trigger's extra field",
      '{"name":"tasks__create","arguments":{"name":"x","action":{"tool":"files__list"},"trigger":{"everySeconds":3600,"timezone":"UTC"}}}',
      /at trigger/,
    ],
    [
      "a run's misspelt input",
      '{"name":"tasks__run","arguments":{"id":"tsk_000000000000000000000000","inputs":{"a":1}}}',
      /Unrecognized key.*"inputs"/,
    ],
    ["a list's misspelt limit", '{"name":"files__list","arguments":{"limt":1}}', /Unrecognized key.*"limt"/],
    [
      "a connection's misspelt scopes",
      '{"name":"connections__add","arguments":{"name":"gh","url":"https://example.com/mcp","auth":{"kind":"oauth","scope":["repo"]}}}',
      /Unrecognized key.*"scope".* at auth/,
    ],
  ])(
    "an argument the tool does not read is refused by name, as REST refuses it: %s",
    async (_label, params, named) => {
      const { body } = await rpc("tools/call", params);
      const result = body.result as { isError: boolean; content: Array<{ text: string }> };
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toMatch(named);
    },
  );

  it("every platform tool that writes says whether it destroys (MCP's default is that it does)", async () => {
    const { body } = await rpc("tools/list", "{}");
    const tools = (body.result as { tools: Array<{ name: string; annotations?: Record<string, unknown> }> })
      .tools;
    const writers = tools.filter((tool) => tool.annotations?.readOnlyHint === false);
    expect(writers.length).toBeGreaterThan(10);
    expect(
      writers.filter((tool) => typeof tool.annotations?.destructiveHint !== "boolean").map((t) => t.name),
    ).toEqual([]);
  });

  it.each(["A", "AAAAA", "QUJD=", "QU JD", "QUJD*==="])(
    "files__write refuses base64 that is not whole groups of four: %s",
    async (base64) => {
      const { body } = await rpc(
        "tools/call",
        JSON.stringify({ name: "files__write", arguments: { name: "b.bin", base64 } }),
      );
      const result = body.result as { isError?: boolean; content: Array<{ text: string }> };
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toMatch(/not valid base64/);
    },
  );

  it("a platform tool's listed input schema says it takes no other field", async () => {
    const { body } = await rpc("tools/list", "{}");
    const create = (
      body.result as { tools: Array<{ name: string; inputSchema: Record<string, unknown> }> }
    ).tools.find((tool) => tool.name === "tasks__create");
    expect(create?.inputSchema.additionalProperties).toBe(false);
  });

  it("a tools/call params key MCP does not define is ignored, as a later revision may define it; REST refuses it", async () => {
    // The params are the protocol's: a field added compatibly raises no version, and 2026-07-28
    // added inputResponses and requestState. A tool's own arguments go under `arguments`, where a
    // platform tool refuses one it does not read (above). ADR 0095, amended.
    const params = { name: "files__list", arguments: { limit: 1 }, "io.example/later": true };
    const { body } = await rpc("tools/call", JSON.stringify(params));
    expect(body.error).toBeUndefined();
    expect(body.result).toMatchObject({ structuredContent: { files: expect.any(Array) } });
    expect((body.result as { isError?: boolean }).isError).toBeUndefined();
    const rest = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, params);
    expect(rest.status).toBe(400);
    expect(await rest.text()).toContain("io.example/later");
  });

  it("arguments that fail the tool's schema are an isError result naming the tool as called", async () => {
    const { body } = await rpc("tools/call", '{"name":"files__read","arguments":{"id":{"__proto__":1}}}');
    const result = body.result as { isError: boolean; content: Array<{ text: string }> };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toBe(
      "Invalid arguments for files__read: Invalid input: expected string, received object at id",
    );
  });

  it("the same over REST", async () => {
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "skills__history",
      arguments: { name: "x", version: "abc" },
    });
    const result = (await response.json()) as { isError: boolean; content: Array<{ text: string }> };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toMatch(/^Invalid arguments for skills__history: .*version$/);
  });
});

describe("error messages carry no doubled MCP prefix", () => {
  // SEP-2164 (final) moved "resource not found" from -32002 to -32602, with the URI as data.
  it("an unknown resource is -32602 with the bare message on the wire", async () => {
    const { body } = await rpc("resources/read", '{"uri":"skill://user/nope"}');
    expect(body.error).toEqual({
      code: -32602,
      message: "Resource not found: skill://user/nope",
      data: { uri: "skill://user/nope" },
    });
  });

  // The v2 client's ProtocolError carries the code in `code` and the server's message as is (v1's
  // "MCP error -32602: " prefix, and its doubling, is pinned in mcp-v1-client.test.ts).
  it("the SDK client shows the server's message once, with the code beside it", async () => {
    const client = await instance.mcpClient("alice", ws);
    const failure = await client.readResource({ uri: "skill://user/nope" }).catch((error: Error) => error);
    expect(failure).toMatchObject({
      name: "ProtocolError",
      code: -32602,
      message: "Resource not found: skill://user/nope",
    });
  });
});
