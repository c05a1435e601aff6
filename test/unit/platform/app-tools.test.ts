import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { NotFound } from "../../../src/errors.ts";
import { AppSource } from "../../../src/platform/app-source.ts";
import { AppTools, type ToolCall } from "../../../src/platform/app-tools.ts";
import { platformInput, progressReporter } from "../../../src/platform/platform-tool.ts";
import type { Caller } from "../../../src/sources/caller-meta.ts";
import { McpSource } from "../../../src/sources/mcp-source.ts";
import { unexpectedErrorOf } from "../../../src/sources/tool-failure.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";

const CALLER: Caller = {
  principalId: "usr_0123456789abcdef01234567",
  workspaceId: "ws_0123456789abcdef",
  access: NO_CALLER,
};

/** What the tools saw of each call. */
let seen: { caller: Caller; args: unknown; cancellable: boolean }[];
let release: (() => void) | undefined;

function createTools(): AppTools {
  const tools = new AppTools("atrium-probe");
  tools.registerTool(
    "count",
    {
      description: "Count to `to`, reporting each step.",
      inputSchema: platformInput({ to: z.number().int().min(1) }),
      annotations: { readOnlyHint: true },
    },
    async (caller, args: { to: number }, call) => {
      seen.push({ caller, args, cancellable: call.signal !== undefined });
      const report = progressReporter(call, (done, total) => `${done} of ${total}`);
      for (let done = 1; done <= args.to; done++) await report?.(done, args.to);
      return { content: [{ type: "text", text: `counted to ${args.to}` }] };
    },
  );
  tools.registerTool(
    "missing",
    { description: "Fails as a missing record does.", inputSchema: platformInput({}), annotations: {} },
    async () => {
      throw new NotFound("record_not_found", "No such record here.");
    },
  );
  tools.registerTool(
    "broken",
    { description: "Fails as a broken disk does.", inputSchema: platformInput({}), annotations: {} },
    async () => {
      throw new Error("EIO: i/o error, read");
    },
  );
  tools.registerTool(
    "wait",
    { description: "Waits until released or cancelled.", inputSchema: platformInput({}), annotations: {} },
    async (_caller, _args, call: ToolCall) => {
      await new Promise<void>((resolve) => {
        release = resolve;
        call.signal?.addEventListener("abort", () => resolve(), { once: true });
      });
      return { content: [{ type: "text", text: call.signal?.aborted ? "stopped" : "released" }] };
    },
  );
  return tools;
}

// The same tools reached two ways: directly (how the router calls them) and through the app's own
// SDK server on the in-memory pair, the caller in host-owned `_meta` (how an MCP client would).
const ARMS = {
  direct: (tools: AppTools) => new AppSource("probe", tools),
  protocol: (tools: AppTools) =>
    new McpSource("probe", { kind: "in-memory", createServer: () => tools.server }),
};

for (const [arm, sourceOf] of Object.entries(ARMS)) {
  describe(`a platform app's tools, called ${arm}`, () => {
    let source: AppSource | McpSource;

    beforeEach(() => {
      seen = [];
      release = undefined;
      source = sourceOf(createTools());
    });

    afterEach(async () => {
      await source.close();
    });

    it("hands the tool the caller and its checked arguments, and relays its progress in order", async () => {
      const reports: unknown[] = [];
      const result = await source.callTool("count", { to: 2 }, CALLER, {
        onProgress: (report) => reports.push(report),
      });
      expect(result).toEqual({ content: [{ type: "text", text: "counted to 2" }] });
      expect(seen).toEqual([{ caller: CALLER, args: { to: 2 }, cancellable: arm === "protocol" }]);
      expect(reports).toEqual([
        { progress: 1, total: 2, message: "1 of 2" },
        { progress: 2, total: 2, message: "2 of 2" },
      ]);
    });

    it("answers arguments outside the schema as the SDK's server does, without running the tool", async () => {
      const result = await source.callTool("count", { to: 0 }, CALLER);
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([
        {
          type: "text",
          text: expect.stringMatching(/^Input validation error: Invalid arguments for tool count: .* at to$/),
        },
      ]);
      expect(seen).toEqual([]);
    });

    it("turns Atrium's errors into results, and hands an unexpected one over for the router to log", async () => {
      expect((await source.callTool("missing", {}, CALLER)).content).toEqual([
        { type: "text", text: "No such record here." },
      ]);
      const broken = await source.callTool("broken", {}, CALLER);
      expect(broken.isError).toBe(true);
      expect(unexpectedErrorOf(broken)?.message).toBe("EIO: i/o error, read");
    });

    it("stops waiting when the caller cancels, and the tool is told", async () => {
      const cancel = new AbortController();
      const call = source.callTool("wait", {}, CALLER, { requestId: "request", signal: cancel.signal });
      await expect.poll(() => release).toBeDefined();
      cancel.abort(new Error("the run timed out"));
      await expect(call).rejects.toThrow();
    });

    it("does not start a call whose caller has already cancelled", async () => {
      const cancelled = AbortSignal.abort(new Error("the run was cancelled"));
      await expect(
        source.callTool("count", { to: 1 }, CALLER, { requestId: "request", signal: cancelled }),
      ).rejects.toThrow();
      expect(seen).toEqual([]);
    });

    it("is answered when the tool finishes before any cancel", async () => {
      const call = source.callTool("wait", {}, CALLER, {
        requestId: "request",
        signal: new AbortController().signal,
      });
      await expect.poll(() => release).toBeDefined();
      release?.();
      expect((await call).content).toEqual([{ type: "text", text: "released" }]);
    });
  });
}

describe("a platform call's wait for its caller's cancel", () => {
  let source: AppSource;

  beforeEach(() => {
    seen = [];
    release = undefined;
    source = new AppSource("probe", createTools());
  });

  afterEach(async () => {
    await source.close();
  });

  it("listens for the cancel only once the call outlives the turn it started in", async () => {
    const cancel = new AbortController();
    const listening = vi.spyOn(cancel.signal, "addEventListener");
    const result = await source.callTool("count", { to: 1 }, CALLER, { signal: cancel.signal });
    expect(result.content).toEqual([{ type: "text", text: "counted to 1" }]);
    expect(listening).not.toHaveBeenCalled();

    const waiting = source.callTool("wait", {}, CALLER, { signal: cancel.signal });
    // The tool listens as it starts; the wait, once the call is still running a turn later.
    await expect.poll(() => listening.mock.calls.map(([type]) => type)).toEqual(["abort", "abort"]);
    release?.();
    await waiting;
  });

  it("is cancelled by an abort in the call's first turn, even when the tool then answers", async () => {
    const cancel = new AbortController();
    const call = source.callTool("wait", {}, CALLER, { signal: cancel.signal });
    await Promise.resolve();
    cancel.abort(new Error("the run timed out"));
    // The tool hears the abort and answers "stopped"; the caller has stopped waiting before that.
    await expect(call).rejects.toThrow("the run timed out");
  });

  it("is cancelled by an abort before it listens, when the tool never answers", async () => {
    const cancel = new AbortController();
    const call = source.callTool("wait", {}, CALLER, { signal: cancel.signal });
    await expect.poll(() => release).toBeDefined();
    cancel.abort(new Error("the run was cancelled"));
    await expect(call).rejects.toThrow("the run was cancelled");
  });
});

describe("AppTools", () => {
  it("lists each tool once, as its SDK server writes it", async () => {
    const source = new AppSource("probe", createTools());
    const tools = await source.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["count", "missing", "broken", "wait"]);
    expect(tools[0]?.inputSchema).toMatchObject({ type: "object", properties: { to: { type: "integer" } } });
    expect(await source.listTools()).toBe(tools);
    await source.close();
  });

  it("refuses a tool registered twice", () => {
    const tools = createTools();
    const again = () =>
      tools.registerTool(
        "count",
        { description: "Again.", inputSchema: platformInput({}), annotations: {} },
        async () => ({ content: [] }),
      );
    expect(again).toThrow('The tool "count" is registered twice.');
  });

  it("on its own server, answers a call without the host's caller as unexpected", async () => {
    const source = new McpSource("probe", { kind: "in-memory", createServer: () => createTools().server });
    // The router always sets the caller; a call that skips it is Atrium's bug, logged, never run.
    const result = await source.callTool("count", { to: 1 }, undefined as unknown as Caller);
    expect(unexpectedErrorOf(result)?.message).toBe(
      "This platform tool was called without the host's caller context.",
    );
    await source.close();
  });
});
