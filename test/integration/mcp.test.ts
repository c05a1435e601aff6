import type { CallToolResult, Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { MCP_ERAS, refusedConnect } from "../helpers/mcp-eras.ts";
import { mcpRequest, readMcpMessage } from "../helpers/mcp-request.ts";

const MAX_BODY_BYTES = 64 * 1024;
const FILE_ID = /^fl_[0-9a-f]{24}$/;

let instance: TestAtrium;
let ws: string;
let client: Client;

beforeAll(async () => {
  instance = await startTestAtrium({ maxBodyBytes: MAX_BODY_BYTES });
  ws = await bootstrapWorkspace(instance, "alice");
  client = await instance.mcpClient("alice", ws);
});

afterAll(async () => {
  await instance?.stop();
});

async function call(
  name: string,
  args: Record<string, unknown>,
  as: Client = client,
): Promise<CallToolResult> {
  return (await as.callTool({ name, arguments: args })) as CallToolResult;
}

function structured<T>(result: CallToolResult): T {
  expect(result.isError ?? false).toBe(false);
  return result.structuredContent as T;
}

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === "text" ? first.text : "";
}

/** One JSON-RPC message POSTed to /mcp/<ws> without the SDK client, so the id and headers are ours. */
function post(user: string, workspaceId: string, message: unknown, headers: Record<string, string> = {}) {
  return instance.rest(user, "POST", `/mcp/${workspaceId}`, JSON.stringify(message), {
    ...MCP_POST_HEADERS,
    ...headers,
  });
}

function initializeMessage(protocolVersion: string, id: number | string = 1) {
  return {
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "0" } },
  };
}

// The core of the MCP surface, once per era Atrium serves (test/helpers/mcp-eras.ts).
describe.each(MCP_ERAS)("the core of /mcp/ws_… in %s", (era) => {
  let eraClient: Client;

  beforeAll(async () => {
    eraClient = await instance.mcpClient("alice", ws, { era });
  });

  it("the SDK client speaks this era", () => {
    expect(eraClient.getNegotiatedProtocolVersion()).toBe(era);
  });

  it("lists the tools", async () => {
    const { tools } = await eraClient.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["files__write", "files__info", "skills__read"]),
    );
  });

  it("writes a file and describes it", async () => {
    const written = structured<{ id: string }>(
      await call("files__write", { name: `core-${era}.txt`, text: era }, eraClient),
    );
    const info = structured<{ id: string; name: string; size: number }>(
      await call("files__info", { id: written.id }, eraClient),
    );
    expect(info).toMatchObject({ id: written.id, name: `core-${era}.txt`, size: era.length });
  });

  it("lists and reads the platform skill as a skill:// resource", async () => {
    const { resources } = await eraClient.listResources();
    expect(resources.map((r) => r.uri)).toContain("skill://platform/using-atrium-files");
    const read = await eraClient.readResource({ uri: "skill://platform/using-atrium-files" });
    const [content] = read.contents;
    expect(content && "text" in content ? content.text : "").toContain("files__");
  });

  it("a stranger gets the wall's 404, and the SDK client cannot connect", async () => {
    const { headers, body } = mcpRequest(era, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    const refused = await instance.rest("mallory", "POST", `/mcp/${ws}`, body, headers);
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("workspace_not_found");
    await expect(instance.mcpClient("mallory", ws, { era })).rejects.toMatchObject(refusedConnect(era, 404));
  });

  it("a raw tools/list as this era's client sends it is answered", async () => {
    const { headers, body } = mcpRequest(era, { jsonrpc: "2.0", id: 5, method: "tools/list" });
    const response = await instance.rest("alice", "POST", `/mcp/${ws}`, body, headers);
    expect(response.status).toBe(200);
    const message = (await readMcpMessage(response)) as { id: number; result: { tools: unknown[] } };
    expect(message.id).toBe(5);
    expect(message.result.tools.length).toBeGreaterThan(0);
  });
});

describe("tools over /mcp/ws_…", () => {
  it("lists the platform apps' tools, each with a description and an input schema", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual([
      "connections__add",
      "connections__authorize",
      "connections__disable",
      "connections__enable",
      "connections__grant",
      "connections__grants",
      "connections__list",
      "connections__refresh",
      "connections__remove",
      "connections__revoke_grant",
      "connections__snapshots",
      "connections__status",
      "conversations__append",
      "conversations__create",
      "conversations__delete",
      "conversations__export",
      "conversations__fork",
      "conversations__get",
      "conversations__list",
      "conversations__search",
      "conversations__update",
      "files__delete",
      "files__info",
      "files__list",
      "files__read",
      "files__write",
      "notifications__ack",
      "notifications__list",
      "notifications__read",
      "skills__create",
      "skills__delete",
      "skills__history",
      "skills__list",
      "skills__read",
      "skills__update",
      "tasks__cancel_run",
      "tasks__create",
      "tasks__delete",
      "tasks__get",
      "tasks__get_run",
      "tasks__list",
      "tasks__run",
      "tasks__runs",
      "tasks__update",
    ]);
    for (const tool of tools) {
      expect(tool.description, tool.name).toEqual(expect.any(String));
      expect(tool.description?.length, tool.name).toBeGreaterThan(10);
      expect(tool.inputSchema.type, tool.name).toBe("object");
    }
    const write = tools.find((t) => t.name === "files__write");
    expect(Object.keys(write?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["name", "text", "base64", "mimeType"]),
    );
    expect(write?.inputSchema.required).toEqual(["name"]);
  });

  it("writes, lists, describes, reads and deletes a file", async () => {
    const written = structured<{ id: string; name: string; size: number; mimeType: string }>(
      await call("files__write", { name: "notes.md", text: "hello, atrium" }),
    );
    expect(written.id).toMatch(FILE_ID);
    expect(written).toMatchObject({ name: "notes.md", size: 13, mimeType: "text/plain; charset=utf-8" });

    const listed = structured<{ files: Array<{ id: string }> }>(await call("files__list", {}));
    expect(listed.files.map((f) => f.id)).toContain(written.id);

    const info = structured<{ id: string; sha256: string; size: number }>(
      await call("files__info", { id: written.id }),
    );
    expect(info).toMatchObject({ id: written.id, size: 13 });
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);

    const read = structured<{ content: string; encoding: string }>(
      await call("files__read", { id: written.id }),
    );
    expect(read).toMatchObject({ content: "hello, atrium", encoding: "utf8" });

    const deleted = await call("files__delete", { id: written.id });
    expect(deleted.isError ?? false).toBe(false);
    const after = structured<{ files: Array<{ id: string }> }>(await call("files__list", {}));
    expect(after.files.map((f) => f.id)).not.toContain(written.id);
    const gone = await call("files__read", { id: written.id });
    expect(gone.isError).toBe(true);
  });

  it("a file written over MCP downloads over REST with its content, type and length", async () => {
    const content = "line one\nline two — ünïcode\n";
    const written = structured<{ id: string }>(
      await call("files__write", { name: "doc.txt", text: content, mimeType: "text/markdown" }),
    );
    const response = await instance.rest("alice", "GET", `/v1/files/${written.id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/markdown");
    expect(response.headers.get("content-length")).toBe(String(Buffer.byteLength(content)));
    expect(await response.text()).toBe(content);
  });

  it("a file uploaded over REST reads back over MCP", async () => {
    const upload = await instance.rest(
      "alice",
      "POST",
      `/v1/workspaces/${ws}/files?name=x`,
      "uploaded body",
      {
        "content-type": "text/plain",
      },
    );
    expect(upload.status).toBe(201);
    const meta = (await upload.json()) as { id: string; name: string };
    expect(meta).toMatchObject({ name: "x" });
    const read = structured<{ content: string; name: string }>(await call("files__read", { id: meta.id }));
    expect(read).toMatchObject({ content: "uploaded body", name: "x" });
  });

  it("an unknown tool of a known source is an isError result naming it as called", async () => {
    const result = await call("files__nope", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Unknown tool "files__nope"/);
  });

  it("a tool of an unknown source is an isError result", async () => {
    const result = await call("ghost__write", { name: "a", text: "b" });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Unknown tool "ghost__write"/);
    const bare = await call("write", { name: "a", text: "b" });
    expect(bare.isError).toBe(true);
  });
});

describe("the /mcp URL", () => {
  it("bare /mcp names no workspace and is refused", async () => {
    const bare = await instance.rest(
      "alice",
      "POST",
      "/mcp",
      JSON.stringify(initializeMessage("2025-11-25")),
      {
        ...MCP_POST_HEADERS,
      },
    );
    expect(bare.status).toBe(404);
    expect(((await bare.json()) as { error: { code: string } }).error.code).toBe("workspace_required");
    const slash = await post("alice", "", initializeMessage("2025-11-25"));
    expect(slash.status).toBe(404);
  });

  it.each(["GET", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS"])(
    "%s /mcp/ws_… is 405 with Allow: POST",
    async (method) => {
      const response = await instance.rest("alice", method, `/mcp/${ws}`, undefined, {
        accept: "text/event-stream",
      });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    },
  );
});

describe("DNS-rebinding protection", () => {
  const init = JSON.stringify(initializeMessage("2025-11-25"));

  it("a foreign Origin is refused with 403", async () => {
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: { ...MCP_POST_HEADERS, origin: "http://evil.example" },
      body: init,
    });
    expect(response.status).toBe(403);
    expect(response.text).toMatch(/forbidden_origin/);
  });

  it("a foreign Host is refused with 403", async () => {
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: { ...MCP_POST_HEADERS, host: `evil.example:${instance.atrium.port}` },
      body: init,
    });
    expect(response.status).toBe(403);
    expect(response.text).toMatch(/forbidden_host/);
  });

  it("a loopback Origin and Host pass", async () => {
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: {
        ...MCP_POST_HEADERS,
        host: `localhost:${instance.atrium.port}`,
        origin: "http://localhost:5173",
      },
      body: init,
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text).result.serverInfo.name).toBe("atrium");
  });
});

describe("protocol versions", () => {
  it("the SDK client is served 2025-11-25", async () => {
    const transport = client.transport as StreamableHTTPClientTransport;
    expect(transport.protocolVersion).toBe("2025-11-25");
  });

  it("a client asking for 2025-06-18 gets 2025-06-18", async () => {
    const response = await post("alice", ws, initializeMessage("2025-06-18"));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(
      "2025-06-18",
    );
  });

  it("a client asking for an unknown revision is offered 2025-11-25", async () => {
    const response = await post("alice", ws, initializeMessage("2099-01-01"));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(
      "2025-11-25",
    );
  });

  it("an MCP-Protocol-Version header this server does not speak is 400", async () => {
    const list = { jsonrpc: "2.0", id: 7, method: "tools/list", params: {} };
    for (const version of ["1999-01-01", "2024-11-05"]) {
      const response = await post("alice", ws, list, { "mcp-protocol-version": version });
      expect(response.status, version).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(version);
    }
    const accepted = await post("alice", ws, list, { "mcp-protocol-version": "2025-06-18" });
    expect(accepted.status).toBe(200);
  });
});

describe("request bodies", () => {
  it("a body over the MCP body limit is refused with 413", async () => {
    const huge = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "files__write", arguments: { name: "big.txt", text: "x".repeat(MAX_BODY_BYTES) } },
    };
    const response = await post("alice", ws, huge);
    expect(response.status).toBe(413);
    const listed = structured<{ files: Array<{ name: string }> }>(await call("files__list", {}));
    expect(listed.files.map((f) => f.name)).not.toContain("big.txt");
  });

  it("a chunked body over the MCP body limit (no Content-Length) is refused with 413", async () => {
    const message = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "files__write",
        arguments: { name: "big-chunked.txt", text: "x".repeat(MAX_BODY_BYTES) },
      },
    });
    const bytes = new TextEncoder().encode(message);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.byteLength; at += 8192) controller.enqueue(bytes.slice(at, at + 8192));
        controller.close();
      },
    });
    const response = await instance.rest("alice", "POST", `/mcp/${ws}`, body, MCP_POST_HEADERS);
    expect(response.status).toBe(413);
    const listed = structured<{ files: Array<{ name: string }> }>(await call("files__list", {}));
    expect(listed.files.map((f) => f.name)).not.toContain("big-chunked.txt");
  });

  it("a body that is not JSON is a JSON-RPC parse error", async () => {
    const response = await instance.rest("alice", "POST", `/mcp/${ws}`, "{not json", MCP_POST_HEADERS);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it("a body just under the limit is accepted", async () => {
    const message = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "files__write", arguments: { name: "fits.txt", text: "y".repeat(MAX_BODY_BYTES / 2) } },
    };
    const response = await post("alice", ws, message);
    expect(response.status).toBe(200);
  });
});

describe("concurrent requests", () => {
  it("many callers sending the same JSON-RPC id each get their own answer", async () => {
    const bobWs = await bootstrapWorkspace(instance, "bob");
    const callers = Array.from({ length: 40 }, (_, i) => ({
      user: i % 2 === 0 ? "alice" : "bob",
      workspaceId: i % 2 === 0 ? ws : bobWs,
      name: `same-id-${i}.txt`,
      text: `payload ${i}`,
    }));
    const responses = await Promise.all(
      callers.map(async (c) => {
        const response = await post(c.user, c.workspaceId, {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "files__write", arguments: { name: c.name, text: c.text } },
        });
        expect(response.status).toBe(200);
        return (await response.json()) as {
          id: number;
          result: { structuredContent: { id: string; name: string; size: number; workspaceId: string } };
        };
      }),
    );
    for (const [i, body] of responses.entries()) {
      const sent = callers[i];
      expect(body.id).toBe(1);
      expect(body.result.structuredContent).toMatchObject({
        name: sent?.name,
        size: Buffer.byteLength(sent?.text ?? ""),
        workspaceId: sent?.workspaceId,
      });
    }
    const ids = new Set(responses.map((r) => r.result.structuredContent.id));
    expect(ids.size).toBe(callers.length);
  });

  it("two SDK clients issuing the same ids in parallel each read their own file", async () => {
    const second = await instance.mcpClient("alice", ws);
    const [one, two] = await Promise.all([
      call("files__write", { name: "one.txt", text: "one" }, client),
      call("files__write", { name: "two.txt", text: "two" }, second),
    ]);
    const oneId = structured<{ id: string }>(one).id;
    const twoId = structured<{ id: string }>(two).id;
    const reads = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0 ? call("files__read", { id: oneId }, client) : call("files__read", { id: twoId }, second),
      ),
    );
    for (const [i, read] of reads.entries()) {
      expect(structured<{ content: string }>(read).content).toBe(i % 2 === 0 ? "one" : "two");
    }
  });
});
