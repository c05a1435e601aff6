import { McpServer } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { createLogger } from "../../../src/log.ts";
import { ToolDispatch } from "../../../src/sources/dispatch.ts";
import { IdleCache } from "../../../src/sources/idle-cache.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { Router } from "../../../src/sources/router.ts";

const WS = "ws_0123456789abcdef";
const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const MALLORY = "usr_cccccccccccccccccccccccc";
const CALL = { requestId: "8d1f7c4e-0000-4000-8000-000000000002" };

/** Who is a member where: Alice of WS, nobody else. */
const membership = {
  roleOf: (ws: string, who: string) => (ws === WS && who === ALICE ? ("member" as const) : undefined),
};

function createNotesServer(calls: string[]): McpServer {
  const server = new McpServer({ name: "notes", version: "1.0.0" });
  server.registerTool(
    "read",
    { description: "Read.", inputSchema: z.object({}), annotations: { readOnlyHint: true } },
    async () => {
      calls.push("read");
      return { content: [{ type: "text", text: "read" }] };
    },
  );
  server.registerTool("write", { description: "Write.", inputSchema: z.object({}) }, async () => {
    calls.push("write");
    return { content: [{ type: "text", text: "written" }] };
  });
  return server;
}

let calls: string[];
let registries: IdleCache<SourceRegistry>;
let dispatch: ToolDispatch;

beforeEach(() => {
  calls = [];
  registries = new IdleCache<SourceRegistry>(
    async (workspaceId) => {
      const registry = new SourceRegistry(workspaceId);
      registry.add(
        new McpSource("notes", { kind: "in-memory", createServer: () => createNotesServer(calls) }),
      );
      return registry;
    },
    (registry) => registry.close(),
    60_000,
  );
  dispatch = new ToolDispatch(
    membership,
    { isDeactivated: () => false },
    registries,
    new Router(createLogger("silent")),
  );
});

afterEach(async () => {
  await registries.close();
});

describe("ToolDispatch, the one way a tool is called", () => {
  it("calls the tool as a member, through the router", async () => {
    const result = await dispatch.call({ principalId: ALICE, workspaceId: WS }, "notes__write", {}, CALL);
    expect(result.content).toEqual([{ type: "text", text: "written" }]);
    expect(calls).toEqual(["write"]);
  });

  it("refuses a stranger with the workspace's one 404 before any source is touched", async () => {
    await expect(
      dispatch.call({ principalId: MALLORY, workspaceId: WS }, "notes__read", {}, CALL),
    ).rejects.toMatchObject({
      code: "workspace_not_found",
      status: 404,
    });
    expect(calls).toEqual([]);
  });

  it("holds a scoped credential to the scope the tool needs", async () => {
    const reader = { principalId: ALICE, workspaceId: WS, scopes: ["mcp:read"] };
    const read = await dispatch.call(reader, "notes__read", {}, CALL);
    expect(read.isError).toBeFalsy();
    await expect(dispatch.call(reader, "notes__write", {}, CALL)).rejects.toMatchObject({
      status: 403,
      message: expect.stringMatching(/needs the mcp:write scope/),
    });
    // An unknown tool costs the write scope too: a name is never cheaper than what it names.
    await expect(dispatch.call(reader, "notes__nope", {}, CALL)).rejects.toMatchObject({ status: 403 });
    expect(calls).toEqual(["read"]);
  });
});

describe("refusals before any source", () => {
  it("are told to listeners with who, which tool and why, and only refusals are", async () => {
    const denials: unknown[] = [];
    dispatch.onDenied(async (denial) => void denials.push(denial));
    const reader = { principalId: ALICE, workspaceId: WS, scopes: ["mcp:read"] };
    await dispatch.call(reader, "notes__read", {}, CALL);
    await expect(dispatch.call(reader, "notes__write", {}, CALL)).rejects.toMatchObject({ status: 403 });
    const stranger = { principalId: MALLORY, workspaceId: WS };
    await expect(dispatch.call(stranger, "notes__read", {}, CALL)).rejects.toMatchObject({ status: 404 });
    expect(denials).toEqual([
      { caller: reader, tool: "notes__write", by: "scope", requestId: CALL.requestId },
      { caller: stranger, tool: "notes__read", by: "membership", requestId: CALL.requestId },
    ]);
  });
});
