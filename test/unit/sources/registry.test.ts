import { McpServer } from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.ts";
import type { Caller } from "../../../src/sources/caller-meta.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { SourceRegistry } from "../../../src/sources/registry.ts";
import { Router } from "../../../src/sources/router.ts";
import type { Source } from "../../../src/sources/source.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";

// The registry is caller-aware: a personal source (`my_…`, with an owner) is listed, found and
// called by its owner alone; everyone else gets what a source that does not exist gets (ADR 0042).

const WS = "ws_0123456789abcdef";
const ALICE: Caller = { principalId: "usr_aaaaaaaaaaaaaaaaaaaaaaaa", workspaceId: WS, access: NO_CALLER };
const BOB: Caller = { principalId: "usr_bbbbbbbbbbbbbbbbbbbbbbbb", workspaceId: WS, access: NO_CALLER };
const CALL = { requestId: "8d1f7c4e-0000-4000-8000-000000000001" };
const router = new Router(createLogger("silent"));
let registry: SourceRegistry;

function notes(owner: string | undefined, reply: string, name = "my_notes"): Source {
  const source = new McpSource(name, {
    kind: "in-memory",
    createServer: () => {
      const server = new McpServer({ name: "notes", version: "1" });
      server.registerTool("read", { description: "Read notes." }, async () => ({
        content: [{ type: "text", text: reply }],
      }));
      return server;
    },
  });
  return owner === undefined ? source : Object.assign(source, { owner });
}

beforeEach(() => {
  registry = new SourceRegistry(WS);
});

afterEach(async () => {
  await registry.close();
});

describe("a personal source", () => {
  it("is listed and called by its owner only; another member meets an unknown tool", async () => {
    registry.add(notes(ALICE.principalId, "alice's notes"));
    expect((await router.listTools(registry, ALICE.principalId)).map((t) => t.name)).toEqual([
      "my_notes__read",
    ]);
    expect(await router.listTools(registry, BOB.principalId)).toEqual([]);
    expect(await router.findTool(registry, BOB.principalId, "my_notes__read")).toBeUndefined();
    const own = await router.callTool(registry, ALICE, "my_notes__read", {}, CALL);
    expect(own.content).toEqual([{ type: "text", text: "alice's notes" }]);
    const other = await router.callTool(registry, BOB, "my_notes__read", {}, CALL);
    const missing = await router.callTool(registry, BOB, "my_absent__read", {}, CALL);
    expect(other.isError).toBe(true);
    expect(JSON.stringify(other).replaceAll("my_notes", "my_absent")).toBe(JSON.stringify(missing));
  });

  it("two members may each have one of the same name, and each reaches their own", async () => {
    registry.add(notes(ALICE.principalId, "alice's notes"));
    registry.add(notes(BOB.principalId, "bob's notes"));
    const bobs = await router.callTool(registry, BOB, "my_notes__read", {}, CALL);
    expect(bobs.content).toEqual([{ type: "text", text: "bob's notes" }]);
    await registry.remove("my_notes", BOB.principalId);
    expect(await router.listTools(registry, BOB.principalId)).toEqual([]);
    expect(await router.listTools(registry, ALICE.principalId)).toHaveLength(1);
  });

  it("the my_ prefix and an owner go together", () => {
    expect(() => registry.add(notes(undefined, "x"))).toThrow("only a personal source");
    expect(() => registry.add(notes(ALICE.principalId, "x", "notes"))).toThrow("only a personal source");
  });
});

// A platform app's source is lent to every registry by the instance; an upgrade can bring one whose
// name a workspace connection already bears, and the connection must not take its place (adr/0128).
describe("a lent source", () => {
  it("is never replaced: its name is refused, and it still answers", async () => {
    const app = notes(undefined, "the app's", "greeter");
    const lending = new SourceRegistry(WS, [app]);
    try {
      expect(() => lending.replace(notes(undefined, "a connection's", "greeter"))).toThrow(
        'Source "greeter" is already registered.',
      );
      const result = await router.callTool(lending, ALICE, "greeter__read", {}, CALL);
      expect(result.content).toEqual([{ type: "text", text: "the app's" }]);
    } finally {
      await lending.close();
      await app.close();
    }
  });

  it("is not taken out by a remove of its name", async () => {
    const app = notes(undefined, "the app's", "greeter");
    const lending = new SourceRegistry(WS, [app]);
    try {
      await lending.remove("greeter");
      expect(lending.get("greeter", ALICE.principalId)).toBe(app);
      const result = await router.callTool(lending, ALICE, "greeter__read", {}, CALL);
      expect(result.content).toEqual([{ type: "text", text: "the app's" }]);
    } finally {
      await lending.close();
      await app.close();
    }
  });
});
