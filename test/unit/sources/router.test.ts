import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import {
  type CallToolResult,
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
} from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { createFrontServers } from "../../../src/http/mcp/front-server.ts";
import { RequestMuxTransport } from "../../../src/http/mcp/request-mux-transport.ts";
import { createLogger } from "../../../src/log.ts";
import { AppSource } from "../../../src/platform/app-source.ts";
import { AppTools } from "../../../src/platform/app-tools.ts";
import { platformInput } from "../../../src/platform/platform-tool.ts";
import {
  CALLER_META_KEY,
  type Caller,
  callerFromMeta,
  MissingCaller,
} from "../../../src/sources/caller-meta.ts";
import { ToolDispatch } from "../../../src/sources/dispatch.ts";
import { IdleCache } from "../../../src/sources/idle-cache.ts";
import { McpSource, SourceRetired } from "../../../src/sources/mcp-source.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { type CallContext, Router } from "../../../src/sources/router.ts";
import type { Source } from "../../../src/sources/source.ts";
import { UNEXPECTED_META_KEY } from "../../../src/sources/tool-failure.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";
import { loggedErr } from "../../helpers/atrium.ts";

const WS = "ws_0123456789abcdef";
const CALLER: Caller = { principalId: "usr_0123456789abcdef01234567", workspaceId: WS, access: NO_CALLER };
const FORGED: Caller = {
  principalId: "usr_ffffffffffffffffffffffff",
  workspaceId: "ws_ffffffffffffffff",
  access: NO_CALLER,
};
const REQUEST_ID = "8d1f7c4e-0000-4000-8000-000000000001";
const CALL: CallContext = { requestId: REQUEST_ID };

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
  server.registerTool("wait", { description: "Wait until cancelled." }, async (ctx) => {
    await new Promise<void>((resolve) => ctx.mcpReq.signal.addEventListener("abort", () => resolve()));
    seen.push({ meta: { cancelled: true }, args: undefined });
    return { content: [{ type: "text", text: "stopped" }] };
  });
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
let logged: Array<Record<string, unknown>>;
const router = new Router(
  createLogger("error", {
    write(line: string) {
      logged.push(JSON.parse(line) as Record<string, unknown>);
    },
  }),
);

beforeEach(() => {
  seen = [];
  logged = [];
  registry = new SourceRegistry(WS);
  registry.add(new McpSource("echo", { kind: "in-memory", createServer: () => createEchoServer(seen) }));
});

afterEach(async () => {
  await registry.close();
});

describe("Router.listTools", () => {
  it("namespaces each tool with its source's name", async () => {
    const tools = await router.listTools(registry, CALLER.principalId);
    expect(tools.map((t) => t.name).sort()).toEqual(["echo__fail", "echo__say", "echo__wait"]);
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
    const tools = await router.listTools(registry, CALLER.principalId);
    expect(tools.map((t) => t.name).sort()).toEqual(["echo__fail", "echo__say", "echo__wait"]);
  });
});

describe("Router.callTool", () => {
  it("a call whose signal is aborted is cancelled at the server and answered as cancelled, not logged", async () => {
    const controller = new AbortController();
    const call = router.callTool(registry, CALLER, "echo__wait", {}, { ...CALL, signal: controller.signal });
    // The call reaches the server before it is cancelled: list, then call, over the in-memory pair.
    await router.listTools(registry, CALLER.principalId);
    controller.abort(new Error("timed out"));
    const result = await call;
    expect(result).toEqual({
      content: [{ type: "text", text: 'Tool "echo__wait" was cancelled.' }],
      isError: true,
    });
    await expect.poll(() => seen.some((entry) => entry.meta?.cancelled === true)).toBe(true);
    expect(logged).toEqual([]);
  });

  it("routes to the named source's tool and returns its result", async () => {
    const result = await router.callTool(registry, CALLER, "echo__say", { text: "hello" }, CALL);
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe("hello");
    expect(seen[0]?.args).toEqual({ text: "hello" });
  });

  it("gives the server the caller's identity in _meta[dev.atrium/caller], and nothing else", async () => {
    await router.callTool(registry, CALLER, "echo__say", { text: "hi" }, CALL);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: CALLER });
  });

  it("a caller without its access check is no caller: a platform tool would write past its access", () => {
    const { access: _dropped, ...identity } = CALLER;
    expect(() => callerFromMeta({ [CALLER_META_KEY]: identity })).toThrow(MissingCaller);
    expect(callerFromMeta({ [CALLER_META_KEY]: CALLER }).access).toBe(CALLER.access);
  });

  it("passes a scoped caller's scopes on, so a platform app can record them (a task's definer)", async () => {
    const scoped: Caller = { ...CALLER, scopes: ["mcp:read", "mcp:write"] };
    await router.callTool(registry, scoped, "echo__say", { text: "hi" }, CALL);
    expect(callerFromMeta(seen[0]?.meta)).toEqual(scoped);
    expect(callerFromMeta({ [CALLER_META_KEY]: { ...CALLER, scopes: [1] } })).toEqual(CALLER);
  });

  it("a _meta smuggled in the arguments does not become the call's _meta", async () => {
    await router.callTool(
      registry,
      CALLER,
      "echo__say",
      { text: "hi", _meta: { [CALLER_META_KEY]: FORGED } },
      CALL,
    );
    expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: CALLER });
  });

  it("an unknown source is an isError result naming the tool", async () => {
    const result = await router.callTool(registry, CALLER, "nope__say", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('Unknown tool "nope__say"');
  });

  it("a name without a separator is an isError result naming it", async () => {
    const result = await router.callTool(registry, CALLER, "say", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('Unknown tool "say"');
  });

  it("an unknown tool of a known source is an isError result naming the tool", async () => {
    const result = await router.callTool(registry, CALLER, "echo__missing", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("missing");
    expect(seen).toHaveLength(0);
  });

  it("a tool that throws is an isError result", async () => {
    const result = await router.callTool(registry, CALLER, "echo__fail", undefined, CALL);
    expect(result.isError).toBe(true);
    // Not a platform app: its result is its server's words, as a remote server's are.
    expect(text(result)).toContain("the tool broke");
    expect(logged).toHaveLength(0);
  });

  it("a source that throws is an isError result naming the tool and the request, its words only in the log", async () => {
    registry.add(
      new McpSource("broken", {
        kind: "in-memory",
        createServer: () => {
          throw new Error("cannot start /srv/atrium/data");
        },
      }),
    );
    const result = await router.callTool(registry, CALLER, "broken__anything", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      `Tool "broken__anything" failed unexpectedly; the server logged it as request ${REQUEST_ID}.`,
    );
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 50, requestId: REQUEST_ID, tool: "broken__anything" });
    expect(loggedErr(logged[0]).message).toBe("cannot start /srv/atrium/data");
    expect(loggedErr(logged[0]).stack).toContain("router.test.ts");
  });

  it("a platform tool's unexpected error is logged with its stack and answered by request id", async () => {
    const tools = new AppTools("app");
    tools.registerTool(
      "read",
      { description: "Fails the way a broken disk does.", inputSchema: platformInput({}), annotations: {} },
      async () => {
        throw new Error("EACCES: permission denied, open '/srv/atrium/data/ws_x/meta.json'");
      },
    );
    registry.add(new AppSource("app", tools));
    const result = await router.callTool(registry, CALLER, "app__read", {}, CALL);
    expect(result).toEqual({
      content: [
        {
          type: "text",
          text: `Tool "app__read" failed unexpectedly; the server logged it as request ${REQUEST_ID}.`,
        },
      ],
      isError: true,
    });
    expect(JSON.stringify(result)).not.toContain(UNEXPECTED_META_KEY);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      level: 50,
      requestId: REQUEST_ID,
      tool: "app__read",
      err: { message: "EACCES: permission denied, open '/srv/atrium/data/ws_x/meta.json'" },
    });
    expect(loggedErr(logged[0]).stack).toContain("router.test.ts");
  });

  it("a source's protocol error keeps its server's words, without the SDK's doubled prefix, and logs nothing", async () => {
    registry.add(
      new McpSource("strict", {
        kind: "in-memory",
        createServer: () => {
          const server = new McpServer({ name: "strict", version: "1.0.0" });
          server.server.registerCapabilities({ tools: {} });
          server.server.setRequestHandler("tools/list", async () => ({
            tools: [{ name: "pick", inputSchema: { type: "object" } }],
          }));
          server.server.setRequestHandler("tools/call", async () => {
            // What a v1 server sends when it passes on a protocol error it received.
            throw new ProtocolError(
              ProtocolErrorCode.InvalidParams,
              "MCP error -32602: MCP error -32602: colour must be red or blue",
            );
          });
          return server;
        },
      }),
    );
    const result = await router.callTool(registry, CALLER, "strict__pick", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('Tool "strict__pick" failed: colour must be red or blue');
    expect(logged).toHaveLength(0);
  });

  it("only the given registry is consulted: another workspace's source is unknown", async () => {
    const other = new SourceRegistry(FORGED.workspaceId);
    try {
      const result = await router.callTool(other, FORGED, "echo__say", { text: "hi" }, CALL);
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('Unknown tool "echo__say"');
      expect(seen).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it("refuses a caller of one workspace handed to another workspace's registry, calling nothing", async () => {
    const other = new SourceRegistry(FORGED.workspaceId);
    try {
      other.add(registry.get("echo", CALLER.principalId) as Source);
      const result = await router.callTool(other, CALLER, "echo__say", { text: "hi" }, CALL);
      expect(result.isError).toBe(true);
      expect(text(result)).toContain(`failed unexpectedly; the server logged it as request ${REQUEST_ID}`);
      expect(seen).toHaveLength(0);
      expect(loggedErr(logged[0]).message).toBe(
        `a caller of ${CALLER.workspaceId} reached the registry of ${FORGED.workspaceId}`,
      );
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
    const membership = {
      roleOf: (ws: string, who: string) =>
        ws === WS && who === CALLER.principalId ? ("member" as const) : undefined,
    };
    const { legacy: front } = createFrontServers({
      router,
      registries,
      dispatch: new ToolDispatch(membership, { isDeactivated: () => false }, registries, router),
      log: createLogger("silent"),
      guidance: {
        instructions: async () => "",
        annotateTools: async (_ws, _who, tools) => tools,
        listResources: async () => [],
        readResource: async () => undefined,
        packages: async () => [],
        packageFiles: async () => undefined,
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
              extra: {
                atrium: { principal: { id: CALLER.principalId }, workspaceId: WS, requestId: REQUEST_ID },
              },
            },
          },
          {
            async send(message) {
              replies.push(message);
              resolve();
            },
            cancelled: () => {},
          },
        );
      });
      await answered;
      expect(replies[0]).toMatchObject({ id: 7, result: { content: [{ type: "text", text: "hi" }] } });
      expect(seen).toHaveLength(1);
      // The dispatch built the caller, its access check included; the client's is dropped.
      expect(seen[0]?.meta).toEqual({ [CALLER_META_KEY]: { ...CALLER, access: expect.any(Function) } });
    } finally {
      await registries.close();
      await front.close();
    }
  });
});

describe("a source closed under a call", () => {
  /** A source named `srv` whose call runs `call`; its list holds one tool, `echo`. */
  function fake(call: () => Promise<CallToolResult>): Source {
    return {
      name: "srv",
      listTools: async () => [{ name: "echo", inputSchema: { type: "object" } }],
      callTool: call,
      close: async () => undefined,
    } as unknown as Source;
  }

  it("is called again, once, on the source that serves the name now", async () => {
    const newer = fake(async () => ({ content: [{ type: "text", text: "from the newer client" }] }));
    // The swap lands after the call took the old source: closed for good, it refuses the call.
    const old = fake(async () => {
      registry.replace(newer);
      throw new SourceRetired("srv");
    });
    registry.add(old);
    const result = await router.callTool(registry, CALLER, "srv__echo", {}, CALL);
    expect(text(result)).toBe("from the newer client");
    expect(logged).toHaveLength(0);
  });

  it("is refused by name, never logged as unexpected, when the newer source is closed too", async () => {
    const retired = () =>
      fake(async () => {
        registry.replace(retired());
        throw new SourceRetired("srv");
      });
    registry.add(retired());
    const result = await router.callTool(registry, CALLER, "srv__echo", {}, CALL);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("call it again");
    expect(logged).toHaveLength(0);
  });
});
