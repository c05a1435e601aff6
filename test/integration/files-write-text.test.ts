// files__write's `text` is stored as UTF-8, which has no bytes for half a surrogate pair: encoded
// anyway, Node put U+FFFD in its place and the tool answered "Stored", the file holding other text
// than was sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { MCP_ERAS } from "../helpers/mcp-eras.ts";

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
});

async function fileCount(): Promise<number> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/files`);
  return ((await response.json()) as { files: unknown[] }).files.length;
}

describe.each(MCP_ERAS)("files__write with text that is not whole Unicode (%s)", (era) => {
  it.each([
    ["a lone high surrogate", "a\ud800b"],
    ["a lone low surrogate at the end", "ab\udc00"],
    ["a pair in the wrong order", "a\udc00\ud800b"],
  ])("%s is a tool error saying so, and no file is stored", async (_case, text) => {
    const client = await instance.mcpClient("alice", ws, { era });
    const before = await fileCount();
    const result = await client.callTool({ name: "files__write", arguments: { name: "half.txt", text } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain("surrogate");
    expect(await fileCount()).toBe(before);
  });
});

describe("files__write over REST's tools/call", () => {
  it("refuses half a surrogate pair the same way, and keeps a whole pair as sent", async () => {
    const before = await fileCount();
    const refused = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "files__write",
      arguments: { name: "half.txt", text: "a\ud800b" },
    });
    expect(((await refused.json()) as { isError?: boolean }).isError).toBe(true);
    expect(await fileCount()).toBe(before);

    const stored = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/tools/call`, {
      name: "files__write",
      arguments: { name: "whole.txt", text: "a\ud83d\ude00b" },
    });
    const { structuredContent } = (await stored.json()) as { structuredContent: { id: string } };
    const download = await instance.rest("alice", "GET", `/v1/files/${structuredContent.id}`);
    expect(await download.text()).toBe("a😀b");
  });
});
