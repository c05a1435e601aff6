import { McpServer } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import { createLogger } from "../../../src/log.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { Router } from "../../../src/sources/router.ts";
import type { Source } from "../../../src/sources/source.ts";

const WS = "ws_0123456789abcdef";
const ALICE = "usr_0123456789abcdef01234567";
const BOB = "usr_ffffffffffffffffffffffff";
const router = new Router(createLogger("silent"));

/** A real in-memory MCP server with the named tools; `servers` keeps each one built. */
function source(name: string, tools: string[], servers: McpServer[] = []): McpSource {
  const created = new McpSource(name, {
    kind: "in-memory",
    createServer: () => {
      const server = new McpServer({ name, version: "1.0.0" });
      for (const tool of tools) {
        server.registerTool(
          tool,
          { description: `The ${tool} tool.`, inputSchema: { x: z.string() } },
          () => ({
            content: [],
          }),
        );
      }
      servers.push(server);
      return server;
    },
  });
  return created;
}

/** A personal source (`my_…`) of `owner`, served by a real in-memory server. */
function personal(name: string, tools: string[], owner: string): Source {
  const inner = source(name, tools);
  return {
    name,
    owner,
    listTools: () => inner.listTools(),
    callTool: (...args) => inner.callTool(...args),
    close: () => inner.close(),
  };
}

let registry: SourceRegistry;

beforeEach(() => {
  registry = new SourceRegistry(WS);
  registry.add(source("files", ["read", "write"]));
});

afterEach(async () => {
  await registry.close();
});

const listed = async (who = ALICE) => (await router.listTools(registry, who)).map((t) => t.name);

describe("the composed tool list", () => {
  it("is the same list object while nothing changed", async () => {
    const first = await router.listTools(registry, ALICE);
    expect(first.map((t) => t.name)).toEqual(["files__read", "files__write"]);
    expect(await router.listTools(registry, ALICE)).toBe(first);
  });

  it("shows a source added, replaced and removed (a connection's life)", async () => {
    await listed();
    registry.add(source("crm", ["find"]));
    expect(await listed()).toEqual(["files__read", "files__write", "crm__find"]);
    await registry.replace(source("crm", ["find", "update"]));
    expect(await listed()).toEqual(["files__read", "files__write", "crm__find", "crm__update"]);
    await registry.remove("crm");
    expect(await listed()).toEqual(["files__read", "files__write"]);
  });

  it("shows a tool the source's server adds, once the server says its list changed", async () => {
    const servers: McpServer[] = [];
    registry.add(source("live", ["one"], servers));
    expect(await listed()).toContain("live__one");
    servers[0]?.registerTool("two", { description: "Added later." }, () => ({ content: [] }));
    await expect.poll(listed).toContain("live__two");
  });

  it("is composed per caller: a personal source is in its owner's list alone", async () => {
    expect(await listed(BOB)).toEqual(["files__read", "files__write"]);
    registry.add(personal("my_notes", ["jot"], ALICE));
    expect(await listed(ALICE)).toEqual(["files__read", "files__write", "my_notes__jot"]);
    expect(await listed(BOB)).toEqual(["files__read", "files__write"]);
    await registry.remove("my_notes", ALICE);
    expect(await listed(ALICE)).toEqual(["files__read", "files__write"]);
  });

  it("asks a source that failed again on the next request rather than keeping its absence", async () => {
    let fail = true;
    const flaky: Source = {
      name: "flaky",
      listTools: async () => {
        if (fail) throw new Error("down");
        return [{ name: "ping", inputSchema: { type: "object" } }];
      },
      callTool: async () => ({ content: [] }),
      close: async () => {},
    };
    registry.add(flaky);
    expect(await listed()).toEqual(["files__read", "files__write"]);
    fail = false;
    expect(await listed()).toEqual(["files__read", "files__write", "flaky__ping"]);
  });

  it("a new registry (a restart, or an idle workspace loaded again) composes afresh", async () => {
    const first = await router.listTools(registry, ALICE);
    const again = new SourceRegistry(WS);
    again.add(source("files", ["read"]));
    expect((await router.listTools(again, ALICE)).map((t) => t.name)).toEqual(["files__read"]);
    expect(await router.listTools(registry, ALICE)).toBe(first);
    await again.close();
  });
});
