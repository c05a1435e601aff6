import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool } from "../../../bench/lib/call-tool.ts";
import { releaseAll } from "../../../bench/lib/cleanup.ts";
import { createMetadataFixture, type MetadataFixture } from "../../../bench/lib/metadata-fixture.ts";
import { startBenchServer } from "../../../bench/lib/start-bench-server.ts";
import type { RunningTarget } from "../../../bench/lib/target.ts";
import { type Era, toolCallRequest } from "../../../bench/lib/tool-call.ts";

// The bench's bare-SDK baseline (the SDK's createMcpHandler, a child process on a free port)
// answers the bench's own request in both eras; the refusals show the 2026-07-28 leg really
// checks what that revision requires, so the bench's request is what makes it pass.

let fixture: MetadataFixture;
let target: RunningTarget;

beforeAll(async () => {
  fixture = await createMetadataFixture();
  target = await startBenchServer("bare-sdk", "info", fixture);
});

afterAll(async () => {
  await releaseAll();
});

async function send(
  era: Era,
  edit: (request: ReturnType<typeof toolCallRequest>) => void,
): Promise<Response> {
  const request = toolCallRequest(target.call, era);
  edit(request);
  return fetch(target.call.url, { ...request, signal: AbortSignal.timeout(10_000) });
}

describe("the bench's tools/call against the v2 bare-SDK baseline", () => {
  it.each(["2025-11-25", "2026-07-28"] as const)("succeeds in %s", async (era) => {
    const result = await callTool(target.call, era);
    expect(result.structuredContent?.id).toBe(fixture.fileId);
  });

  it("a 2026-07-28 request without Mcp-Method is refused", async () => {
    const response = await send("2026-07-28", (request) => {
      delete request.headers["mcp-method"];
    });
    expect(response.status).toBe(400);
  });

  it("a 2026-07-28 request whose Mcp-Name disagrees with the body is refused", async () => {
    const response = await send("2026-07-28", (request) => {
      request.headers["mcp-name"] = "other";
    });
    expect(response.status).toBe(400);
  });

  it("a 2026-07-28 request without the _meta envelope is refused", async () => {
    const response = await send("2026-07-28", (request) => {
      const body = JSON.parse(request.body) as { params: Record<string, unknown> };
      delete body.params._meta;
      request.body = JSON.stringify(body);
    });
    expect(response.status).toBe(400);
  });
});
