import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { HeldCalls, heldCall, honoMcpPath, postHeld } from "../helpers/held-calls.ts";
import { MCP_ERAS, type McpEra } from "../helpers/mcp-eras.ts";
import { mcpRequest } from "../helpers/mcp-request.ts";

// A tool call can be stopped, in both eras: when its client closes the connection before the
// answer, or sends notifications/cancelled naming it, the tool's signal aborts and a remote
// server is sent notifications/cancelled by its SDK client. Only the caller who sent a request
// can cancel it (adr/0065). Each tool here waits until it is cancelled or released, so nothing
// waits on time.

const held = new HeldCalls();
const captured = capturingLogger();
let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ apps: [...PLATFORM_APPS, held.app], log: captured.log });
  ws = await bootstrapWorkspace(instance, "alice");
  const bob = (await (await instance.rest("bob", "GET", "/v1/bootstrap")).json()) as {
    principal: { id: string };
  };
  const invited = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/invitations`, {
    principalId: bob.principal.id,
  });
  const { invitation } = (await invited.json()) as { invitation: { id: string } };
  expect((await instance.rest("bob", "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(200);
});

afterAll(async () => {
  held.releaseAll();
  await instance?.stop();
});

function cancelNotification(era: McpEra, requestId: number | string) {
  return mcpRequest(era, {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId, reason: "no longer needed" },
  });
}

/** How many requests the log says their client left before the answer (status 499). */
function clientsGone(): number {
  return captured.lines.filter((line) => line.msg === "request" && line.status === 499).length;
}

describe.each(MCP_ERAS)("stopping a tool call (%s)", (era) => {
  it.each([
    ["a platform tool, answered with JSON", "slow__wait", false, false],
    ["a platform tool, answered with a stream", "slow__wait", true, false],
    ["a remote server's tool", "remote__wait", false, false],
    ["a call on the hono route (an escaped path)", "slow__wait", false, true],
  ] as const)("a client that closes the connection cancels %s", async (_what, tool, streamed, hono) => {
    const tag = `dropped-${era}-${tool}-${streamed}-${hono}`;
    const running = held.running(tag);
    const { headers, body } = heldCall(era, 1, tool, tag, streamed);
    const path = hono ? honoMcpPath(ws) : `/mcp/${ws}`;
    const posted = postHeld(instance, "alice", path, headers, body);
    posted.answer.catch(() => {});
    await running;
    const gone = clientsGone();
    posted.request.destroy();
    await expect.poll(() => held.cancelled.includes(tag)).toBe(true);
    // The front door logs a JSON answer it never began as 499; a stream had begun as a 200.
    if (!streamed && !hono) await expect.poll(clientsGone).toBe(gone + 1);
  });

  it("notifications/cancelled from the caller cancels their call, whose POST ends with nothing", async () => {
    const tag = `notified-${era}`;
    const running = held.running(tag);
    const { headers, body } = heldCall(era, "c-1", "slow__wait", tag);
    const posted = postHeld(instance, "alice", `/mcp/${ws}`, headers, body);
    await running;
    const notice = cancelNotification(era, "c-1");
    const sent = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    expect(sent.status).toBe(202);
    expect(await posted.answer).toMatchObject({ status: 202, text: "" });
    expect(held.cancelled).toContain(tag);
  });

  // 2026-07-28 has no batches.
  it.skipIf(era === "2026-07-28")(
    "a batch whose one request is cancelled is answered with the others",
    async () => {
      const tag = `batched-${era}`;
      const running = held.running(tag);
      const { headers, body: slow } = heldCall(era, "b-1", "slow__wait", tag);
      const ping = { jsonrpc: "2.0", id: "b-2", method: "ping" };
      const posted = postHeld(instance, "alice", `/mcp/${ws}`, headers, [slow, ping]);
      await running;
      const notice = cancelNotification(era, "b-1");
      await instance.raw("alice", "POST", `/mcp/${ws}`, {
        headers: notice.headers,
        body: JSON.stringify(notice.body),
      });
      const answer = await posted.answer;
      expect(JSON.parse(answer.text)).toEqual([{ jsonrpc: "2.0", id: "b-2", result: {} }]);
      expect(held.cancelled).toContain(tag);
    },
  );

  it("nobody else can cancel a call: not another member, not the caller from another workspace", async () => {
    const tag = `kept-${era}`;
    const running = held.running(tag);
    const { headers, body } = heldCall(era, 7, "slow__wait", tag);
    const posted = postHeld(instance, "alice", `/mcp/${ws}`, headers, body);
    await running;
    const notice = cancelNotification(era, 7);
    const bobs = await instance.raw("bob", "POST", `/mcp/${ws}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    const otherWorkspace = await instance.rest("alice", "POST", "/v1/workspaces", { name: `other ${era}` });
    const other = ((await otherWorkspace.json()) as { id: string }).id;
    const elsewhere = await instance.raw("alice", "POST", `/mcp/${other}`, {
      headers: notice.headers,
      body: JSON.stringify(notice.body),
    });
    expect([bobs.status, elsewhere.status]).toEqual([202, 202]);
    held.release(tag);
    const answer = await posted.answer;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ id: 7, result: { content: [{ text: "released" }] } });
    expect(held.cancelled).not.toContain(tag);
  });
});
