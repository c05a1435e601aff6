import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { type CallToolResult, McpServer } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { createFrontServers } from "../../../src/http/mcp/front-server.ts";
import { RequestMuxTransport } from "../../../src/http/mcp/request-mux-transport.ts";
import { createLogger } from "../../../src/log.ts";
import { CALLER_META_KEY, type Caller } from "../../../src/sources/caller-meta.ts";
import { IdleCache } from "../../../src/sources/idle-cache.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { Router } from "../../../src/sources/router.ts";

const WS = "ws_0123456789abcdef";
const CALLER: Caller = { principalId: "usr_0123456789abcdef01234567", workspaceId: WS };
const FORGED: Caller = { principalId: "usr_ffffffffffffffffffffffff", workspaceId: "ws_ffffffffffffffff" };

interface Seen {
  meta: Record<string, unknown> | undefined;
  args: unknown;
}

/** A tiny real MCP server that records what each call's handler was given. */
function createEchoServer(seen: Seen[]): McpServer {
  const server = new McpServer({ name: "echo", version: "1.0.0" });
  server.registerTool(
    "say",
    { description: "Echo the text back.", inputSchema: { text: z.string() } },
    async (args, ctx) => {
      seen.push({ meta: ctx.mcpReq._meta, args });
      return { content: [{ type: "text", text: args.text }] };
    },
  );
  server.registerTool("fail", { description: "Always fails." }, async () => {
    throw new Error("the tool broke");
  });
  return server;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

let seen: Seen[];
let registry: SourceRegistry;
const router = new Router(createLogger("silent"));

beforeEach(() => {
  seen = [];
  registry = new SourceRegistry(WS);
  registry.add(new McpSource("echo", { kind: "in-memory", createServer: () => createEchoServer(seen) }));
});

afterEach(async () => {
  await registry.close();
});

describe("Router.listTools", () => {
  it("namespaces each tool with its source's name", async () => {
    const tools = await router.listTools(registry);
    expect(tools.map((t) => t.name).sort()).toEqual(["echo__fail", "echo__say"]);
    expect(tools.find((t) => t.name === "echo__say")?.description).toBe("Echo the text back.");
  });

  it("a source that cannot list its tools does not hide the others'", async () => {
    registry.add(
      new McpSource("broken", {
        kind: "in-memory",
        createServer: () => {
          throw new Error("cannot start");
        },
      }),
    );
    const tools = await router.listTools(registry);
    expect(tools.map((t) => t.name).sort()).toEqual(["echo__fail", "echo__say"]);
  });
});

describe("Router.callTool", () => {
  it("routes to the named source's tool and returns its result", async () => {
    const result = await router.callTool(registry, CALLER, "echo__say", { text: "hello" });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe("hello");
    expect(seen[0]?.args).toEqual({ text: "hello" });
  });

  it("gives the server the caller's identity in _meta[dev.atrium/caller], and nothing else", async () => {
    await router.callTool(registry, CALLER, "echo__say", { text: "hi" });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: CALLER });
  });

  it("a _meta smuggled in the arguments does not become the call's _meta", async () => {
    await router.callTool(registry, CALLER, "echo__say", {
      text: "hi",
      _meta: { [CALLER_META_KEY]: FORGED },
    });
    expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: CALLER });
  });

  it("an unknown source is an isError result naming the tool", async () => {
    const result = await router.callTool(registry, CALLER, "nope__say", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('Unknown tool "nope__say"');
  });

  it("a name without a separator is an isError result naming it", async () => {
    const result = await router.callTool(registry, CALLER, "say", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('Unknown tool "say"');
  });

  it("an unknown tool of a known source is an isError result naming the tool", async () => {
    const result = await router.callTool(registry, CALLER, "echo__missing", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("missing");
    expect(seen).toHaveLength(0);
  });

  it("a tool that throws is an isError result", async () => {
    const result = await router.callTool(registry, CALLER, "echo__fail", undefined);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("the tool broke");
  });

  it("a source that throws yields an isError result naming the tool, not a thrown error", async () => {
    registry.add(
      new McpSource("broken", {
        kind: "in-memory",
        createServer: () => {
          throw new Error("cannot start");
        },
      }),
    );
    const result = await router.callTool(registry, CALLER, "broken__anything", {});
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('Tool "broken__anything" failed: cannot start');
  });

  it("only the given registry is consulted: another workspace's source is unknown", async () => {
    const other = new SourceRegistry("ws_ffffffffffffffff");
    try {
      const result = await router.callTool(other, CALLER, "echo__say", { text: "hi" });
      expect(result.isError).toBe(true);
      expect(seen).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});

describe("through the MCP front server", () => {
  it("a client-supplied params._meta never reaches the source's server", async () => {
    const registries = new IdleCache<SourceRegistry>(
      async () => registry,
      async () => undefined,
      60_000,
    );
    const { legacy: front } = createFrontServers({
      router,
      registries,
      guidance: {
        instructions: async () => "",
        annotateTools: async (_ws, _who, tools) => tools,
        listResources: async () => [],
        readResource: async () => undefined,
        packages: async () => [],
      },
    });
    const mux = new RequestMuxTransport();
    await front.connect(mux);
    try {
      const replies: JSONRPCMessage[] = [];
      const answered = new Promise<void>((resolve) => {
        mux.receive(
          {
            jsonrpc: "2.0",
            id: 7,
            method: "tools/call",
            params: {
              name: "echo__say",
              arguments: { text: "hi" },
              _meta: { [CALLER_META_KEY]: FORGED, other: "client" },
            },
          },
          {
            authInfo: {
              token: "",
              clientId: "",
              scopes: [],
              extra: { atrium: { principal: { id: CALLER.principalId }, workspaceId: WS } },
            },
          },
          {
            async send(message) {
              replies.push(message);
              resolve();
            },
          },
        );
      });
      await answered;
      expect(replies[0]).toMatchObject({ id: 7, result: { content: [{ type: "text", text: "hi" }] } });
      expect(seen).toHaveLength(1);
      expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: CALLER });
    } finally {
      await registries.close();
      await front.close();
    }
  });
});
