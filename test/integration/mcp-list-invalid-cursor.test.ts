import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// MCP pagination (2025-06-18, 2025-11-25 and 2026-07-28, server/utilities/pagination): "Invalid
// cursors SHOULD result in an error with code -32602 (Invalid params)". Every list Atrium serves
// is one whole page with no nextCursor, so no cursor sent to it is one it gave out
// (src/http/mcp/list-cursor.ts). They used to ignore one and answer the whole list again, so a
// client resuming from another server's (or another list's) cursor got duplicates; the
// platform's own paged tools already refused a forged cursor (files__list).

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});
afterAll(async () => {
  await instance?.stop();
});

const LISTS = [
  "tools/list",
  "resources/list",
  "resources/templates/list",
  "prompts/list",
  "skills/list",
] as const;

async function post(headers: Record<string, string>, body: unknown) {
  const response = await instance.raw("alice", "POST", `/mcp/${ws}`, { headers, body: JSON.stringify(body) });
  return JSON.parse(response.text);
}

const LEGACY_HEADERS = { ...MCP_POST_HEADERS, "mcp-protocol-version": "2025-11-25" };

describe("a list method refuses a cursor it never gave out", () => {
  for (const method of LISTS) {
    it(`2025-11-25 ${method} with a forged cursor answers -32602`, async () => {
      const answer = await post(LEGACY_HEADERS, {
        jsonrpc: "2.0",
        id: 1,
        method,
        params: { cursor: "not-a-cursor-of-this-server" },
      });
      expect(answer).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32602,
          message: `Invalid params for ${method}: params.cursor is not a cursor this server gave out. Its ${method} answer is one whole page, with no nextCursor: ask again without a cursor.`,
        },
      });
    });

    it(`2026-07-28 ${method} with a forged cursor answers -32602`, async () => {
      const request = modernMcpRequest({
        jsonrpc: "2.0",
        id: 1,
        method,
        params: { cursor: "bm90LWEtY3Vyc29y" },
      });
      expect(await post(request.headers, request.body)).toMatchObject({ id: 1, error: { code: -32602 } });
    });
  }

  it("in a 2025 batch, only the request with a cursor is refused; the same list without one is answered whole", async () => {
    const answers = await post(LEGACY_HEADERS, [
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "x" } },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
    ]);
    expect(answers[0]).toMatchObject({ id: 1, error: { code: -32602 } });
    expect(answers[1].result.tools.map((tool: { name: string }) => tool.name)).toContain("files__list");
    expect(answers[1].result.nextCursor).toBeUndefined();
  });
});
