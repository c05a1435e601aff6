import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  MCP_POST_HEADERS,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";

let instance: TestAtrium;
let aliceWs: string;

beforeEach(async () => {
  instance = await startTestAtrium();
  aliceWs = await bootstrapWorkspace(instance, "alice");
});

afterEach(async () => {
  await instance?.stop();
});

const bobId = testPrincipal("bob").id;
const aliceId = testPrincipal("alice").id;

async function callTool(user: string, ws: string, name: string, args: Record<string, unknown>) {
  const response = await instance.rest(
    user,
    "POST",
    `/mcp/${ws}`,
    {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name, arguments: args },
    },
    MCP_POST_HEADERS,
  );
  return response;
}

async function toolResult(user: string, ws: string, name: string, args: Record<string, unknown>) {
  const response = await callTool(user, ws, name, args);
  expect(response.status).toBe(200);
  return ((await response.json()) as { result: CallToolResult }).result;
}

async function writeFile(user: string, ws: string, name: string, text: string): Promise<string> {
  const result = await toolResult(user, ws, "files__write", { name, text });
  expect(result.isError ?? false).toBe(false);
  return (result.structuredContent as { id: string }).id;
}

async function addMember(by: string, ws: string, body: Record<string, unknown>) {
  return instance.rest(by, "POST", `/v1/workspaces/${ws}/members`, body);
}

async function memberIds(ws: string): Promise<string[]> {
  const response = await instance.rest("alice", "GET", `/v1/workspaces/${ws}/members`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { members: Array<{ principalId: string }> }).members.map(
    (m) => m.principalId,
  );
}

describe("a stranger meets the wall", () => {
  it("cannot list or call the tools of another person's workspace over MCP", async () => {
    await bootstrapWorkspace(instance, "bob");
    await expect(instance.mcpClient("bob", aliceWs)).rejects.toMatchObject({ code: 404 });
    const list = await instance.rest(
      "bob",
      "POST",
      `/mcp/${aliceWs}`,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
      },
      MCP_POST_HEADERS,
    );
    expect(list.status).toBe(404);
    const write = await callTool("bob", aliceWs, "files__write", { name: "planted.txt", text: "x" });
    expect(write.status).toBe(404);
    const aliceFiles = await instance.rest("alice", "GET", `/v1/workspaces/${aliceWs}/files`);
    expect(((await aliceFiles.json()) as { files: unknown[] }).files).toEqual([]);
  });

  it("cannot list or call the tools of another person's workspace over REST", async () => {
    const tools = await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}/tools`);
    expect(tools.status).toBe(404);
    const call = await instance.rest("bob", "POST", `/v1/workspaces/${aliceWs}/tools/call`, {
      name: "files__write",
      arguments: { name: "planted.txt", text: "x" },
    });
    expect(call.status).toBe(404);
    const upload = await instance.rest("bob", "POST", `/v1/workspaces/${aliceWs}/files?name=planted`, "x");
    expect(upload.status).toBe(404);
    const own = await instance.rest("alice", "GET", `/v1/workspaces/${aliceWs}/tools`);
    expect(own.status).toBe(200);
    const aliceFiles = await instance.rest("alice", "GET", `/v1/workspaces/${aliceWs}/files`);
    expect(((await aliceFiles.json()) as { files: unknown[] }).files).toEqual([]);
  });

  it("cannot read, describe or delete another person's file by its id", async () => {
    const bobWs = await bootstrapWorkspace(instance, "bob");
    const fileId = await writeFile("alice", aliceWs, "secret.txt", "alice's secret");

    expect((await instance.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(404);
    expect((await instance.rest("bob", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
    expect((await instance.rest("bob", "DELETE", `/v1/files/${fileId}`)).status).toBe(404);
    for (const tool of ["files__read", "files__info", "files__delete"]) {
      const result = await toolResult("bob", bobWs, tool, { id: fileId });
      expect(result.isError, tool).toBe(true);
      expect(JSON.stringify(result)).not.toContain("alice's secret");
    }

    const stillThere = await instance.rest("alice", "GET", `/v1/files/${fileId}`);
    expect(stillThere.status).toBe(200);
    expect(await stillThere.text()).toBe("alice's secret");
  });

  it("gets one byte-identical 404 for nonexistent, archived, malformed and not-a-member workspaces", async () => {
    const archived = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Old" });
    const archivedId = ((await archived.json()) as { id: string }).id;
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${archivedId}`)).status).toBe(204);
    const bobWs = await bootstrapWorkspace(instance, "bob");

    const cases: Record<string, string> = {
      nonexistent: "ws_0123456789abcdef",
      archived: archivedId,
      "malformed ws_XYZ": "ws_XYZ",
      "too short": "ws_0123",
      uppercase: "ws_0123456789ABCDEF",
      "not a member": bobWs,
    };
    const expected = await instance.rest("alice", "GET", "/v1/workspaces/ws_fedcba9876543210");
    const expectedBody = await expected.text();
    expect(expected.status).toBe(404);
    expect(JSON.parse(expectedBody).error.code).toBe("workspace_not_found");

    for (const [label, id] of Object.entries(cases)) {
      for (const path of [
        `/v1/workspaces/${id}`,
        `/v1/workspaces/${id}/files`,
        `/v1/workspaces/${id}/members`,
      ]) {
        const response = await instance.rest("alice", "GET", path);
        expect(response.status, `${label} ${path}`).toBe(404);
        expect(response.headers.get("content-type"), `${label} ${path}`).toBe(
          expected.headers.get("content-type"),
        );
        expect(await response.text(), `${label} ${path}`).toBe(expectedBody);
      }
      const mcp = await instance.rest(
        "alice",
        "POST",
        `/mcp/${id}`,
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
        },
        MCP_POST_HEADERS,
      );
      expect(mcp.status, `${label} over MCP`).toBe(404);
      expect(await mcp.text(), `${label} over MCP`).toBe(expectedBody);
    }
  });

  it("does not see another person's workspace in its own list", async () => {
    await bootstrapWorkspace(instance, "bob");
    const response = await instance.rest("bob", "GET", "/v1/workspaces");
    const ids = ((await response.json()) as { workspaces: Array<{ id: string }> }).workspaces.map(
      (w) => w.id,
    );
    expect(ids).toHaveLength(1);
    expect(ids).not.toContain(aliceWs);
  });
});

describe("membership opens and closes the wall", () => {
  it("a person added by email can reach the workspace over MCP and REST", async () => {
    const before = await addMember("alice", aliceWs, { email: "bob@example.test" });
    expect(before.status).toBe(404);
    expect(((await before.json()) as { error: { code: string } }).error.code).toBe("user_not_found");

    await bootstrapWorkspace(instance, "bob");
    const added = await addMember("alice", aliceWs, { email: "BOB@example.test" });
    expect(added.status).toBe(201);
    expect(await memberIds(aliceWs)).toContain(bobId);

    expect((await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}`)).status).toBe(200);
    const client = await instance.mcpClient("bob", aliceWs);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("files__write");
  });

  it("a person added by principal id can reach the workspace", async () => {
    expect((await instance.rest("carol", "GET", "/v1/workspaces")).status).toBe(200);
    const carolId = testPrincipal("carol").id;
    const added = await addMember("alice", aliceWs, { principalId: carolId, role: "member" });
    expect(added.status).toBe(201);
    const tools = await instance.rest("carol", "GET", `/v1/workspaces/${aliceWs}/tools`);
    expect(tools.status).toBe(200);
  });

  it("a removed member's next call is refused, over MCP and REST", async () => {
    await bootstrapWorkspace(instance, "bob");
    expect((await addMember("alice", aliceWs, { principalId: bobId })).status).toBe(201);
    const client = await instance.mcpClient("bob", aliceWs);
    await client.listTools();
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}/files`)).status).toBe(200);

    expect(
      (await instance.rest("alice", "DELETE", `/v1/workspaces/${aliceWs}/members/${bobId}`)).status,
    ).toBe(204);

    await expect(client.listTools()).rejects.toMatchObject({ code: 404 });
    await expect(client.callTool({ name: "files__list", arguments: {} })).rejects.toMatchObject({
      code: 404,
    });
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}/files`)).status).toBe(404);
    expect((await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}/tools`)).status).toBe(404);
  });

  it("a member who is not an admin cannot rename, delete or manage members", async () => {
    await bootstrapWorkspace(instance, "bob");
    await instance.rest("carol", "GET", "/v1/workspaces");
    expect((await addMember("alice", aliceWs, { principalId: bobId })).status).toBe(201);
    const carolId = testPrincipal("carol").id;

    const attempts: Array<[string, string, Record<string, unknown> | undefined]> = [
      ["PATCH", `/v1/workspaces/${aliceWs}`, { name: "Bob's now" }],
      ["DELETE", `/v1/workspaces/${aliceWs}`, undefined],
      ["POST", `/v1/workspaces/${aliceWs}/members`, { principalId: carolId }],
      ["PATCH", `/v1/workspaces/${aliceWs}/members/${bobId}`, { role: "admin" }],
      ["PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, { role: "member" }],
      ["DELETE", `/v1/workspaces/${aliceWs}/members/${aliceId}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const response = await instance.rest("bob", method, path, body);
      expect(response.status, `${method} ${path}`).toBe(403);
    }

    const ws = (await (await instance.rest("alice", "GET", `/v1/workspaces/${aliceWs}`)).json()) as {
      name: string;
    };
    expect(ws.name).toBe("alice's workspace");
    const members = (await (
      await instance.rest("alice", "GET", `/v1/workspaces/${aliceWs}/members`)
    ).json()) as {
      members: Array<{ principalId: string; role: string }>;
    };
    expect(members.members.map((m) => [m.principalId, m.role]).sort()).toEqual(
      [
        [aliceId, "admin"],
        [bobId, "member"],
      ].sort(),
    );
  });

  it("the last admin can be neither removed nor demoted", async () => {
    const removed = await instance.rest("alice", "DELETE", `/v1/workspaces/${aliceWs}/members/${aliceId}`);
    expect(removed.status).toBe(409);
    expect(((await removed.json()) as { error: { code: string } }).error.code).toBe("last_admin");
    const demoted = await instance.rest("alice", "PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, {
      role: "member",
    });
    expect(demoted.status).toBe(409);
    expect(await memberIds(aliceWs)).toEqual([aliceId]);
    expect(instance.atrium.workspaces.roleOf(aliceWs, aliceId)).toBe("admin");

    // With a second admin, the first may step down: the 409 was about the last one only.
    await bootstrapWorkspace(instance, "bob");
    await addMember("alice", aliceWs, { principalId: bobId, role: "admin" });
    const stepDown = await instance.rest("alice", "PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, {
      role: "member",
    });
    expect(stepDown.status).toBe(200);
  });

  it("a file in a workspace its owner has left is not reachable by its bare id", async () => {
    await bootstrapWorkspace(instance, "bob");
    expect((await addMember("alice", aliceWs, { principalId: bobId })).status).toBe(201);
    const fileId = await writeFile("bob", aliceWs, "bob-in-alice.txt", "bob's words");
    expect((await instance.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(200);

    expect((await instance.rest("bob", "DELETE", `/v1/workspaces/${aliceWs}/members/${bobId}`)).status).toBe(
      204,
    );

    expect((await instance.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(404);
    expect((await instance.rest("bob", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
    expect((await instance.rest("bob", "DELETE", `/v1/files/${fileId}`)).status).toBe(404);
  });

  it("a file in an archived workspace is not reachable by its bare id, even by its owner", async () => {
    const created = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Short-lived" });
    const ws = ((await created.json()) as { id: string }).id;
    const fileId = await writeFile("alice", ws, "left-behind.txt", "old");
    expect((await instance.rest("alice", "GET", `/v1/files/${fileId}`)).status).toBe(200);

    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);

    expect((await instance.rest("alice", "GET", `/v1/files/${fileId}`)).status).toBe(404);
    expect((await instance.rest("alice", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
    expect((await callTool("alice", ws, "files__read", { id: fileId })).status).toBe(404);
  });

  it("a client cannot choose whom it acts as through _meta", async () => {
    const bobWs = await bootstrapWorkspace(instance, "bob");
    const forged = { "dev.atrium/caller": { principalId: bobId, workspaceId: bobWs } };
    const response = await instance.rest(
      "alice",
      "POST",
      `/mcp/${aliceWs}`,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "forged.txt", text: "x" }, _meta: forged },
      },
      MCP_POST_HEADERS,
    );
    const result = ((await response.json()) as { result: CallToolResult }).result;
    expect(result.isError ?? false).toBe(false);
    expect(result.structuredContent).toMatchObject({ ownerId: aliceId, workspaceId: aliceWs });
    const bobFiles = await toolResult("bob", bobWs, "files__list", {});
    expect((bobFiles.structuredContent as { files: unknown[] }).files).toEqual([]);
  });

  it("files are private to their owner within a shared workspace", async () => {
    await bootstrapWorkspace(instance, "bob");
    expect((await addMember("alice", aliceWs, { principalId: bobId })).status).toBe(201);
    const aliceFile = await writeFile("alice", aliceWs, "alice-only.txt", "mine");
    const bobFile = await writeFile("bob", aliceWs, "bob-only.txt", "his");

    const bobList = await toolResult("bob", aliceWs, "files__list", {});
    const bobIds = (bobList.structuredContent as { files: Array<{ id: string }> }).files.map((f) => f.id);
    expect(bobIds).toEqual([bobFile]);
    const bobRest = await instance.rest("bob", "GET", `/v1/workspaces/${aliceWs}/files`);
    expect(((await bobRest.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id)).toEqual([
      bobFile,
    ]);

    expect((await toolResult("bob", aliceWs, "files__read", { id: aliceFile })).isError).toBe(true);
    expect((await toolResult("bob", aliceWs, "files__delete", { id: aliceFile })).isError).toBe(true);
    expect((await instance.rest("bob", "GET", `/v1/files/${aliceFile}`)).status).toBe(404);

    const aliceRead = await toolResult("alice", aliceWs, "files__read", { id: aliceFile });
    expect((aliceRead.structuredContent as { content: string }).content).toBe("mine");
  });
});

describe("identity", () => {
  it("a request without the identity header is refused with 401", async () => {
    const rest = await instance.rest(null, "GET", "/v1/workspaces");
    expect(rest.status).toBe(401);
    const mcp = await instance.rest(
      null,
      "POST",
      `/mcp/${aliceWs}`,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
      },
      MCP_POST_HEADERS,
    );
    expect(mcp.status).toBe(401);
  });
});
