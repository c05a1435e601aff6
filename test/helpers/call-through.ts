import { expect, vi } from "vitest";
import type { Task } from "../../src/platform/tasks/model.ts";
import type { TestAtrium } from "./atrium.ts";
import { postHeld } from "./held-calls.ts";
import { MCP_ERAS, type McpEra } from "./mcp-eras.ts";
import { mcpRequest } from "./mcp-request.ts";

/** The ways a person's tool call reaches a platform tool, besides a tool's own REST twin. */
export type CallEntry = `mcp ${McpEra}` | "rest tools/call" | "a task run";
export const CALL_ENTRIES: readonly CallEntry[] = [
  ...MCP_ERAS.map((era) => `mcp ${era}` as const),
  "rest tools/call",
  "a task run",
];

/**
 * Starts `tool` with `args` as `member` in `ws` through `entry`: a raw MCP POST, REST's tools/call,
 * or a run of a new task of theirs. Resolves once the call is sent (a run once started); its
 * answer, when something waits for one, is `answer` (settled, never rejected).
 */
export async function callThrough(
  instance: TestAtrium,
  entry: CallEntry,
  member: string,
  ws: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ answer: Promise<unknown> }> {
  if (entry === "a task run") {
    const defined = await instance.rest(member, "POST", `/v1/workspaces/${ws}/tasks`, {
      name: "write",
      action: { tool, arguments: args },
    });
    expect(defined.status, await defined.clone().text()).toBe(201);
    const runs = `/v1/workspaces/${ws}/tasks/${((await defined.json()) as Task).id}/runs`;
    const started = instance.rest(member, "POST", runs, {});
    return { answer: started.catch(() => undefined) };
  }
  if (entry === "rest tools/call") {
    const headers = { "content-type": "application/json" };
    const body = { name: tool, arguments: args };
    const posted = postHeld(instance, member, `/v1/workspaces/${ws}/tools/call`, headers, body);
    return { answer: posted.answer.catch(() => undefined) };
  }
  const era = entry.slice("mcp ".length) as McpEra;
  const message = {
    jsonrpc: "2.0" as const,
    id: 1,
    method: "tools/call",
    params: { name: tool, arguments: args },
  };
  const { headers, body } = mcpRequest(era, message);
  return { answer: postHeld(instance, member, `/mcp/${ws}`, headers, body).answer.catch(() => undefined) };
}

/** The tool calls made since a watch began: their work, and the signal each was given. */
export interface ToolWork {
  settled: () => Promise<void>;
  /** The signal each call was given, by tool name, last call's last: what a transport aborts. */
  signals: Map<string, AbortSignal>;
  stop: () => void;
}

/**
 * Records the work of every tool the instance's dispatch calls from now on, which may run on after
 * its call was cancelled and answered: `settled` resolves once each has ended, so a test knows a
 * held write has committed or been refused. `stop` puts the dispatch back.
 */
export function watchToolWork(instance: TestAtrium): ToolWork {
  const dispatch = instance.atrium.dispatch;
  // A second watch would wrap the first's spy in itself and call itself for ever.
  if (vi.isMockFunction(dispatch.call))
    throw new Error("tool calls are watched already (heldCallsAtrium's tools())");
  const original = dispatch.call.bind(dispatch);
  const works: Promise<unknown>[] = [];
  const signals = new Map<string, AbortSignal>();
  const spy = vi.spyOn(dispatch, "call").mockImplementation((caller, name, args, context) => {
    if (context.signal) signals.set(name, context.signal);
    return original(caller, name, args, {
      ...context,
      onCalled: (work) => {
        works.push(work.catch(() => undefined));
        context.onCalled?.(work);
      },
    });
  });
  return {
    settled: async () => {
      await Promise.all(works);
    },
    signals,
    stop: () => spy.mockRestore(),
  };
}
