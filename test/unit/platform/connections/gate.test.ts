import type { CallToolResult, Tool } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import type { AuditAppender } from "../../../../src/platform/connections/call-audit.ts";
import { ConnectionSource } from "../../../../src/platform/connections/gate.ts";
import type { RemoteSource } from "../../../../src/platform/connections/remote-source.ts";
import { type Snapshot, toolDigest } from "../../../../src/platform/connections/snapshot.ts";
import { SourceRetired } from "../../../../src/sources/mcp-source.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { settle } from "../../../helpers/fake-time.ts";

const caller = {
  principalId: "usr_0123456789abcdef01234567",
  workspaceId: "ws_0123456789abcdef",
  access: NO_CALLER,
};
const PROTOCOL = "2025-06-18";

/** A connection whose snapshot holds `tool` as its server lists it; what reached the server. */
function connection(
  tool: Tool,
  server: Partial<RemoteSource> = {},
): { source: ConnectionSource; sent: unknown[] } {
  const sent: unknown[] = [];
  const snapshot: Snapshot = {
    version: 1,
    takenAt: "2026-01-01T00:00:00.000Z",
    generation: 0,
    protocolVersion: PROTOCOL,
    tools: [tool],
    digests: { [tool.name]: toolDigest(tool) },
    digest: "",
  };
  const live = {
    describe: async () => ({ protocolVersion: PROTOCOL }),
    listTools: async () => [structuredClone(tool)],
    callTool: async (_tool: string, args: unknown): Promise<CallToolResult> => {
      sent.push(args);
      return { content: [{ type: "text", text: "done" }] };
    },
    close: async () => undefined,
    ...server,
  } as unknown as RemoteSource;
  // The ledger is call-audit.test.ts's subject; here it only has to take the entries.
  const ledger = { append: async () => ({}) } as unknown as AuditAppender;
  const state = { credentialLapsed: () => false };
  return { source: new ConnectionSource("remote", snapshot, live, state, ledger), sent };
}

const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;

describe("the call gate's schema check", () => {
  it("refuses a snapshot's schema that loops as a tool error, sending nothing, instead of throwing", async () => {
    const { source, sent } = connection({ name: "loop", inputSchema: { $ref: "#" } } as unknown as Tool);
    const result = await source.callTool("loop", {}, caller);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("The input schema of remote__loop cannot be checked");
    expect(sent).toEqual([]);
  });

  it("refuses arguments nested past the stack of a recursive schema as a tool error", async () => {
    const { source, sent } = connection({
      name: "tree",
      inputSchema: { type: "object", properties: { child: { $ref: "#" } } },
    } as Tool);
    let deep: Record<string, unknown> = {};
    for (let level = 0; level < 100_000; level++) deep = { child: deep };
    const result = await source.callTool("tree", deep, caller);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "The arguments for remote__tree could not be checked: they are nested too deeply.",
    );
    expect(sent).toEqual([]);
    expect((await source.callTool("tree", { child: {} }, caller)).isError).toBeUndefined();
  });

  it("refuses arguments by their first failure, without checking the rest", async () => {
    const { source, sent } = connection({
      name: "tag",
      inputSchema: {
        type: "object",
        properties: { labels: { type: "array", items: { type: "string" } }, weight: { type: "number" } },
      },
    } as Tool);
    const result = await source.callTool(
      "tag",
      { labels: new Array(50_000).fill(0), weight: "heavy" },
      caller,
    );
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "Invalid arguments for remote__tag: #/properties/labels/items/type must be string.",
    );
    expect(sent).toEqual([]);
  });

  it("sends a string a lookahead pattern would judge: the server checks its own arguments", async () => {
    const { source, sent } = connection({
      name: "signup",
      inputSchema: { type: "object", properties: { password: { type: "string", pattern: "^(?=.*\\d)" } } },
    } as Tool);
    expect((await source.callTool("signup", { password: "nodigit" }, caller)).isError).toBeUndefined();
    expect(sent).toEqual([{ password: "nodigit" }]);
  });

  it("refuses arguments too costly to check against the schema's patterns as a tool error, sending nothing", async () => {
    const { source, sent } = connection({
      name: "costly",
      inputSchema: { type: "object", properties: { s: { type: "string", pattern: "[ab]*a[ab]{990}[cd]" } } },
    } as Tool);
    const result = await source.callTool("costly", { s: "ab".repeat(100_000) }, caller);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /^The arguments for remote__costly are too costly to check against its input schema: .* on a string of 200,000 characters went past it/,
    );
    expect(sent).toEqual([]);
  });

  it("refuses arguments whose unions would try too many branches as a tool error, sending nothing", async () => {
    // A server's schema with an anyOf of 40 consts per item, and a member's 699,047 items: 28
    // million ajv errors made and dropped before the call was answered (ADR 0157).
    const { source, sent } = connection({
      name: "pick",
      inputSchema: {
        type: "object",
        properties: {
          ids: { type: "array", items: { anyOf: Array.from({ length: 40 }, (_, i) => ({ const: i })) } },
        },
      },
    } as Tool);
    const result = await source.callTool("pick", { ids: new Array(699_047).fill(39) }, caller);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /^The arguments for remote__pick are too costly to check against its input schema: .* the anyOf at "#\/properties\/ids\/items\/anyOf" went past it/,
    );
    expect(sent).toEqual([]);
    expect((await source.callTool("pick", { ids: [39, 0] }, caller)).isError).toBeUndefined();
    expect(sent).toEqual([{ ids: [39, 0] }]);
  });
});

describe("the call gate's live checks", () => {
  it("stops waiting on the server once the call's signal aborts: a server that never answers the re-list holds nobody", async () => {
    const echo = { name: "echo", inputSchema: { type: "object" } } as Tool;
    let listed = 0;
    const { source, sent } = connection(echo, {
      listTools: () => {
        listed++;
        return new Promise<never>(() => undefined);
      },
    });
    const controller = new AbortController();
    const call = source.callTool("echo", {}, caller, { signal: controller.signal });
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(listed).toBe(1);
    let outcome: unknown = "still waiting";
    call.then(
      () => {
        outcome = "answered";
      },
      (error: unknown) => {
        outcome = error;
      },
    );
    const reason = new Error("task run timeout");
    controller.abort(reason);
    await settle();
    expect(outcome).toBe(reason);
    expect(sent).toEqual([]);
  });

  it("refuses a tool its server now lists nested past any snapshot's depth as drift, sending nothing", async () => {
    const tool = { name: "t", inputSchema: { type: "object", properties: {} } } as Tool;
    let deep: unknown = 0;
    for (let level = 0; level < 100_000; level++) deep = [deep];
    const { source, sent } = connection(tool, {
      listTools: async () => [{ ...tool, annotations: { title: "x", deep } } as Tool],
    });
    const result = await source.callTool("t", {}, caller);
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({
      text: expect.stringMatching(/changed upstream since snapshot 1/),
    });
    expect(sent).toEqual([]);
  });
});

describe("a connection's listing", () => {
  // Photographing refuses such a tool now (snapshot.ts); a snapshot taken before could hold one,
  // and snapshots are never rewritten (adr/0039, amended 2026-12-07).
  it("leaves out a snapshot's tool whose served name would be over 128 characters, and serves one of 128", async () => {
    const fits = { name: "a".repeat(120), inputSchema: { type: "object" } } as Tool;
    const over = { name: "b".repeat(121), inputSchema: { type: "object" } } as Tool;
    expect((await connection(fits).source.listTools()).map((t) => t.name)).toEqual([fits.name]);
    expect(await connection(over).source.listTools()).toEqual([]);
  });
});

describe("a call that reaches a closed connection's source", () => {
  it("sends nothing and hands SourceRetired on, for the router to call the newer source", async () => {
    const tool = { name: "echo", inputSchema: { type: "object" } } as Tool;
    let resets = 0;
    const { source, sent } = connection(tool, {
      callTool: async () => Promise.reject(new SourceRetired("remote")),
      reset: async () => void resets++,
    });
    await expect(source.callTool("echo", {}, caller)).rejects.toBeInstanceOf(SourceRetired);
    expect(sent).toEqual([]);
    expect(resets).toBe(0);
  });
});
