import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { listTree } from "../helpers/fs-tree.ts";

// Every hostile segment names this marker, so a write that escaped the root would leave an
// entry with it in a folder we can check without racing other test files.
const MARKER = "atrium-escape-marker";

/** Hostile path segments, as they appear on the wire (already percent-encoded where needed). */
const HOSTILE_SEGMENTS: Record<string, string> = {
  "dot-dot": "..",
  "dot-dot to marker": `../../${MARKER}`,
  "encoded dot-dot": "%2e%2e",
  "encoded dot-dot slash": `%2e%2e%2f%2e%2e%2f${MARKER}`,
  "encoded slash": `..%2F..%2F${MARKER}`,
  "uppercase encoded slash": `..%2f..%2F${MARKER}`,
  "valid id then slash": `ws_0123456789abcdef%2F..%2F..%2F${MARKER}`,
  "nul alone": "%00",
  "nul inside an id": "ws_0123456789abcde%00",
  "nul then traversal": `%00..%2F${MARKER}`,
  backslash: `..%5C..%5C${MARKER}`,
  overlong: "a".repeat(5000),
  "overlong id shape": `ws_${"0".repeat(5000)}`,
  unicode: encodeURIComponent("ws_０１２３４５６７８９ａｂｃｄｅｆ"),
  "unicode dots": encodeURIComponent(`\u2024\u2024/${MARKER}`),
  "right-to-left override": encodeURIComponent(`ws_\u202e0123456789abcdef`),
};

/** The same ids as they would reach a handler, decoded: for JSON bodies and MCP arguments. */
const HOSTILE_VALUES = [
  "..",
  `../../${MARKER}`,
  `..\\..\\${MARKER}`,
  `fl_${"0".repeat(24)}/../../${MARKER}`,
  `/etc/${MARKER}`,
  "\u0000",
  `fl_0123456789abcdef01234567\u0000`,
  `usr_0123456789abcdef01234567/../${MARKER}`,
  "x".repeat(5000),
  "fl_０１２３４５６７８９ａｂｃｄｅｆ０１２３４５６７",
  "FL_0123456789ABCDEF01234567",
];

let instance: TestAtrium;
let ws: string;
let parentBefore: string[];

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  // A file of alice's, so the owner partition exists and traversal has real folders to start from.
  const upload = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=seed.txt`, "seed");
  expect(upload.status).toBe(201);
  expect(dirname(instance.root)).toBe(instance.dir);
  parentBefore = await listTree(instance.dir);
});

afterAll(async () => {
  await instance?.stop();
});

function expectRefused(status: number, label: string): void {
  expect(status, label).toBeGreaterThanOrEqual(400);
  expect(status, label).toBeLessThan(500);
}

async function mcpCall(method: string, params: Record<string, unknown>, workspaceId = ws) {
  return instance.raw("alice", "POST", `/mcp/${workspaceId}`, {
    headers: MCP_POST_HEADERS,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
}

describe("hostile ids are refused with 4xx", () => {
  it.each(Object.entries(HOSTILE_SEGMENTS))("as a workspace id over REST: %s", async (_label, segment) => {
    const attempts: Array<[string, string, string | undefined]> = [
      ["GET", `/v1/workspaces/${segment}`, undefined],
      ["PATCH", `/v1/workspaces/${segment}`, JSON.stringify({ name: MARKER })],
      ["DELETE", `/v1/workspaces/${segment}`, undefined],
      ["GET", `/v1/workspaces/${segment}/files`, undefined],
      ["POST", `/v1/workspaces/${segment}/files?name=${MARKER}`, "escaped content"],
      ["GET", `/v1/workspaces/${segment}/tools`, undefined],
      [
        "POST",
        `/v1/workspaces/${segment}/tools/call`,
        JSON.stringify({ name: "files__write", arguments: { name: MARKER, text: "x" } }),
      ],
      ["GET", `/v1/workspaces/${segment}/members`, undefined],
      ["POST", `/v1/workspaces/${segment}/members`, JSON.stringify({ email: "alice@example.test" })],
      ["POST", `/v1/workspaces/${segment}/invitations`, JSON.stringify({ email: "alice@example.test" })],
      ["DELETE", `/v1/workspaces/${segment}/invitations/inv_0123456789abcdef0123456789abcdef`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const response = await instance.raw("alice", method, path, {
        headers: body === undefined ? {} : { "content-type": "application/json" },
        ...(body === undefined ? {} : { body }),
      });
      expectRefused(response.status, `${method} ${path.slice(0, 120)}`);
    }
  });

  it.each(Object.entries(HOSTILE_SEGMENTS))("as a workspace id over MCP: %s", async (_label, segment) => {
    const list = await mcpCall("tools/list", {}, segment);
    expectRefused(list.status, "tools/list");
    const write = await mcpCall(
      "tools/call",
      { name: "files__write", arguments: { name: MARKER, text: "x" } },
      segment,
    );
    expectRefused(write.status, "files__write");
  });

  it.each(Object.entries(HOSTILE_SEGMENTS))("as a file id over REST: %s", async (_label, segment) => {
    for (const [method, path] of [
      ["GET", `/v1/files/${segment}`],
      ["GET", `/v1/files/${segment}/meta`],
      ["DELETE", `/v1/files/${segment}`],
    ] as const) {
      const response = await instance.raw("alice", method, path);
      expectRefused(response.status, `${method} ${path.slice(0, 120)}`);
    }
  });

  it.each(Object.entries(HOSTILE_SEGMENTS))("as a member id over REST: %s", async (_label, segment) => {
    const patch = await instance.raw("alice", "PATCH", `/v1/workspaces/${ws}/members/${segment}`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ role: "admin" }),
    });
    expectRefused(patch.status, "PATCH member");
    const remove = await instance.raw("alice", "DELETE", `/v1/workspaces/${ws}/members/${segment}`);
    expectRefused(remove.status, "DELETE member");
  });

  it.each(HOSTILE_VALUES.map((value) => [JSON.stringify(value.slice(0, 40)), value]))(
    "as a file id in an MCP tool call: %s",
    async (_label, value) => {
      for (const tool of ["files__read", "files__info", "files__delete"]) {
        const response = await mcpCall("tools/call", { name: tool, arguments: { id: value } });
        expect(response.status, tool).toBe(200);
        const result = (JSON.parse(response.text) as { result: CallToolResult }).result;
        expect(result.isError, tool).toBe(true);
      }
    },
  );

  it.each(HOSTILE_VALUES.map((value) => [JSON.stringify(value.slice(0, 40)), value]))(
    "as a principal id in a member add: %s",
    async (_label, value) => {
      const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/members`, {
        principalId: value,
      });
      expectRefused(response.status, "POST member");
    },
  );

  it.each(HOSTILE_VALUES.map((value) => [JSON.stringify(value.slice(0, 40)), value]))(
    "as an invitation id: %s",
    async (_label, value) => {
      const segment = encodeURIComponent(value);
      for (const [method, path] of [
        ["POST", `/v1/invitations/${segment}/accept`],
        ["POST", `/v1/invitations/${segment}/decline`],
        ["DELETE", `/v1/workspaces/${ws}/invitations/${segment}`],
      ] as const) {
        expectRefused((await instance.rest("alice", method, path)).status, `${method} ${path}`);
      }
    },
  );

  it("a tool name cannot address a path", async () => {
    for (const name of [`../${MARKER}__write`, `files__../../${MARKER}`, "files__write\u0000", "__write"]) {
      const response = await mcpCall("tools/call", { name, arguments: { name: MARKER, text: "x" } });
      expect(response.status, name).toBe(200);
      expect((JSON.parse(response.text) as { result: CallToolResult }).result.isError, name).toBe(true);
    }
  });
});

describe("after the hostile requests", () => {
  it("nothing changed on disk, inside the root or beside it", async () => {
    expect(await listTree(instance.dir)).toEqual(parentBefore);
    expect((await readdir(tmpdir())).filter((name) => name.includes(MARKER))).toEqual([]);
    expect((await readdir("/")).filter((name) => name.includes(MARKER))).toEqual([]);
  });

  it("a file name with slashes is a label: the file lands in the owner's partition only", async () => {
    const beside = (await listTree(instance.dir)).filter((path) => !path.startsWith("data/"));
    const upload = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/files?name=${encodeURIComponent(`../../../${MARKER}`)}`,
      "label only",
    );
    expect(upload.status).toBe(201);
    const meta = (await upload.json()) as { id: string; name: string; ownerId: string };
    expect(meta.name).toBe(`../../../${MARKER}`);
    const written = await mcpCall("tools/call", {
      name: "files__write",
      arguments: { name: `/tmp/${MARKER}`, text: "label only" },
    });
    expect(JSON.parse(written.text).result.isError ?? false).toBe(false);

    const after = await listTree(instance.dir);
    expect(after.filter((path) => !path.startsWith("data/"))).toEqual(beside);
    expect(after.filter((path) => path.includes(MARKER))).toEqual([]);
    expect(after).toContain(`data/${ws}/files/${meta.ownerId}/${meta.id}/content`);
    expect((await readdir(tmpdir())).filter((name) => name.includes(MARKER))).toEqual([]);
  });

  it("the server still serves", async () => {
    expect((await instance.rest(null, "GET", "/v1/health")).status).toBe(200);
    const list = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
    expect(list.status).toBe(200);
    const client = await instance.mcpClient("alice", ws);
    const result = (await client.callTool({
      name: "files__write",
      arguments: { name: "ok.txt", text: "ok" },
    })) as CallToolResult;
    expect(result.isError ?? false).toBe(false);
  });
});
