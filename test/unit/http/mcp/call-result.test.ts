import { type CallToolResult, Server } from "@modelcontextprotocol/server";
import { beforeEach, describe, expect, it } from "vitest";
import { callResultForEra } from "../../../../src/http/mcp/call-result.ts";
import { pinProtocolEra } from "../../../../src/http/mcp/era-pin.ts";
import { capturingLogger } from "../../../helpers/atrium.ts";

// A front server's era is instance state (adr/0029): one never negotiated is 2025-era, as
// Atrium's legacy front server is; the modern one is pinned.
const REQUEST_ID = "0b7e9a52-0000-4000-8000-000000000003";
const CALL = { tool: "numbers__primes", requestId: REQUEST_ID };
const ARRAY_SCHEMA = { type: "array", items: { type: "integer" } };

function frontServer(era: "2025" | "2026"): Server {
  const server = new Server({ name: "atrium", version: "0" }, { capabilities: { tools: {} } });
  if (era === "2026") pinProtocolEra(server, "2026-07-28");
  return server;
}

let captured: ReturnType<typeof capturingLogger>;
beforeEach(() => {
  captured = capturingLogger();
});

const primes: CallToolResult = { content: [{ type: "text", text: "[2,3,5]" }], structuredContent: [2, 3, 5] };

describe("a tools/call result for the client's era", () => {
  it("2025: a non-object structuredContent is wrapped as {result: …}, as its listing's schema is", () => {
    const answer = callResultForEra(frontServer("2025"), primes, ARRAY_SCHEMA, CALL, captured.log);
    expect(answer).toEqual({ ...primes, structuredContent: { result: [2, 3, 5] } });
  });

  it("2025: an object value is wrapped when the listed schema's root is not an object (anyOf)", () => {
    const pair: CallToolResult = { content: [], structuredContent: { a: 1 } };
    const schema = { anyOf: [{ type: "object" }, { type: "null" }] };
    const answer = callResultForEra(frontServer("2025"), pair, schema, CALL, captured.log);
    expect(answer.structuredContent).toEqual({ result: { a: 1 } });
  });

  it("2025: an object value under an object schema, or a result without structured content, is unchanged", () => {
    const object: CallToolResult = { content: [], structuredContent: { a: 1 } };
    const server = frontServer("2025");
    expect(callResultForEra(server, object, { type: "object" }, CALL, captured.log)).toEqual(object);
    const plain: CallToolResult = { content: [{ type: "text", text: "done" }] };
    expect(callResultForEra(server, plain, undefined, CALL, captured.log)).toEqual(plain);
  });

  it("a result the projection leaves as it is is answered as it is, unchecked here (the SDK checks it)", () => {
    const broken = { content: [{ type: "text" }] } as unknown as CallToolResult;
    expect(callResultForEra(frontServer("2025"), broken, undefined, CALL, captured.log)).toBe(broken);
    expect(captured.lines).toEqual([]);
  });

  it("2026: the natural value is kept", () => {
    const answer = callResultForEra(frontServer("2026"), primes, ARRAY_SCHEMA, CALL, captured.log);
    expect(answer).toEqual(primes);
    expect(captured.lines).toEqual([]);
  });

  it("a reshaped result the era's check refuses is logged with the request id and answered as an unexpected failure", () => {
    const broken = { content: [{ type: "text" }], structuredContent: [1] } as unknown as CallToolResult;
    const answer = callResultForEra(frontServer("2025"), broken, undefined, CALL, captured.log);
    expect(answer).toEqual({
      content: [
        {
          type: "text",
          text: `Tool "numbers__primes" failed unexpectedly; the server logged it as request ${REQUEST_ID}.`,
        },
      ],
      isError: true,
    });
    expect(captured.lines).toHaveLength(1);
    expect(captured.lines[0]).toMatchObject({
      level: 50,
      requestId: REQUEST_ID,
      tool: "numbers__primes",
      unfit: expect.stringContaining("text"),
    });
  });
});
