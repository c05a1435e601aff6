import { createHash } from "node:crypto";
import { ProtocolError, SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Forbidden } from "../../../../src/errors.ts";
import { AuditLedger } from "../../../../src/platform/connections/audit.ts";
import type { AuditRecord } from "../../../../src/platform/connections/audit-entry.ts";
import { type AuditedCall, auditCall, deny } from "../../../../src/platform/connections/call-audit.ts";
import { SourceRetired } from "../../../../src/sources/mcp-source.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;

let temp: TempRoot;
let ledger: AuditLedger;
let base: AuditedCall;
let nowMs: number;
const now = (): number => nowMs;
/** A gate that lets the call go. */
const pass = async (): Promise<undefined> => undefined;
/** The forward of a call the gate denied: never run. */
const unreachable = async (): Promise<ToolResult> => {
  throw new Error("a denied call was forwarded");
};

interface ToolResult {
  content: { type: "text"; text: string }[];
  isError?: boolean;
}

async function trail(): Promise<Omit<AuditRecord, "principalId" | "connection" | "tool">[]> {
  const { entries } = await ledger.page(temp.ws);
  return entries.reverse().map(({ seq, at, principalId, connection, tool, requestId, ...rest }) => {
    expect({ principalId, connection, tool, requestId }).toEqual({
      principalId: ALICE,
      connection: "weather",
      tool: "forecast",
      requestId: "req-9",
    });
    return rest;
  });
}

beforeEach(async () => {
  temp = await openTempRoot("call-audit", ALICE);
  ledger = new AuditLedger(temp.layout.partition("connections"), new FakeTime().clock);
  base = {
    workspaceId: temp.ws,
    requestId: "req-9",
    principalId: ALICE,
    connection: "weather",
    tool: "forecast",
  };
  nowMs = 1000;
});

afterEach(async () => {
  await temp.remove();
});

describe("auditCall", () => {
  it("records requested, allowed and executed with latency, size, digest and isError, and returns the result", async () => {
    const result: ToolResult = { content: [{ type: "text", text: "Sunny, 21°C" }] };
    const answer = await auditCall(
      ledger,
      base,
      pass,
      async () => {
        nowMs += 42.5;
        return result;
      },
      { now },
    );
    expect(answer).toBe(result);
    const json = Buffer.from(JSON.stringify(result), "utf8");
    expect(await trail()).toEqual([
      { phase: "requested" },
      { phase: "decision", decision: "allowed" },
      {
        phase: "executed",
        latencyMs: 42.5,
        resultBytes: json.length,
        resultDigest: `sha256:${createHash("sha256").update(json).digest("hex")}`,
        isError: false,
      },
    ]);
    expect(json.length).toBe(JSON.stringify(result).length + 1); // UTF-8 bytes, not characters: "°" is two
  });

  it("never writes the result's text or the arguments to the ledger", async () => {
    const args = { city: "Secret-City-4711" };
    await auditCall(
      ledger,
      base,
      pass,
      async () => ({ content: [{ type: "text", text: `forecast for ${args.city}` }] }),
      { now },
    );
    const { entries } = await ledger.page(temp.ws);
    expect(JSON.stringify(entries)).not.toContain("Secret-City-4711");
  });

  it("audits a result that looks like a denial as a result: only the gate's deny() denies", async () => {
    const lookalike = { content: [], denied: "snapshot", reason: "server says so" };
    const answer = await auditCall(ledger, base, pass, async () => lookalike, { now });
    expect(answer).toBe(lookalike);
    expect((await trail()).map((e) => [e.phase, e.decision])).toEqual([
      ["requested", undefined],
      ["decision", "allowed"],
      ["executed", undefined],
    ]);
  });

  it("marks an isError result as an error", async () => {
    await auditCall(
      ledger,
      base,
      pass,
      async () => ({ content: [{ type: "text", text: "no such city" }], isError: true }),
      { now },
    );
    expect((await trail())[2]).toMatchObject({ phase: "executed", isError: true });
  });

  it("records a denial by its check and reason, with no executed entry, and returns the denial", async () => {
    const denial = deny("drift", "forecast changed upstream since snapshot 2; refresh the tools");
    const answer = await auditCall<ToolResult>(ledger, base, async () => denial, unreachable, { now });
    expect(answer).toBe(denial);
    expect(await trail()).toEqual([
      { phase: "requested" },
      { phase: "decision", decision: "denied", deniedBy: "drift", reason: denial.reason },
    ]);
  });

  it("clips a long refusal for the ledger at a code point, as one line, and returns it whole", async () => {
    // 198 characters, then an emoji (two UTF-16 units) the cut must not split, a newline and more.
    const long = `${"x".repeat(198)}🌦\nand the rest of it`;
    const denial = deny("schema", long);
    const answer = await auditCall<ToolResult>(ledger, base, async () => denial, unreachable, { now });
    expect(answer).toBe(denial);
    expect((answer as typeof denial).reason).toBe(long);
    const [, decision] = await trail();
    expect(decision).toEqual({
      phase: "decision",
      decision: "denied",
      deniedBy: "schema",
      reason: `${"x".repeat(198)}…`,
    });
    const short = deny("schema", "Invalid arguments:\t#/a must be number\n");
    await auditCall<ToolResult>(ledger, base, async () => short, unreachable, { now });
    expect((await trail())[3]).toMatchObject({ reason: "Invalid arguments: #/a must be number" });
  });

  it("records a forward that throws as allowed, then as an error by its code alone, and throws it on", async () => {
    const failing = auditCall(
      ledger,
      base,
      pass,
      async () => {
        nowMs += 5;
        throw new Forbidden("the token for Secret-City-4711 lapsed");
      },
      { now },
    );
    await expect(failing).rejects.toThrow(Forbidden);
    expect(await trail()).toEqual([
      { phase: "requested" },
      { phase: "decision", decision: "allowed" },
      { phase: "executed", latencyMs: 5, isError: true, reason: "threw forbidden" },
    ]);
    expect(JSON.stringify(await ledger.page(temp.ws))).not.toContain("Secret-City");
  });

  it("writes the allowed decision before the call is forwarded", async () => {
    let before: unknown[] = [];
    await auditCall(
      ledger,
      base,
      pass,
      async () => {
        before = (await trail()).map((e) => e.phase);
        return { content: [] };
      },
      { now },
    );
    expect(before).toEqual(["requested", "decision"]);
  });

  it("names a server's JSON-RPC error protocol_error, a failed transport transport_error and a closed source source_closed, never their words", async () => {
    const errors = [
      new ProtocolError(-32603, "Secret-City-4711 is not a city"),
      new SdkError(SdkErrorCode.ConnectionClosed, "Secret-City-4711 hung up"),
      new SourceRetired("Secret-City-4711"),
      new Error("Secret-City-4711"),
    ];
    for (const error of errors) {
      await expect(auditCall(ledger, base, pass, async () => Promise.reject(error), { now })).rejects.toBe(
        error,
      );
    }
    const executed = (await trail()).filter((e) => e.phase === "executed").map((e) => e.reason);
    expect(executed).toEqual([
      "threw protocol_error",
      "threw transport_error",
      "threw source_closed",
      "threw unexpected_error",
    ]);
    expect((await trail()).filter((e) => e.decision === "allowed")).toHaveLength(4);
    expect(JSON.stringify(await ledger.page(temp.ws))).not.toContain("Secret-City");
  });

  it("records a gate that throws as an error with no decision, and never forwards", async () => {
    let forwarded = false;
    const failing = auditCall(
      ledger,
      base,
      async () => {
        throw new Forbidden("no");
      },
      async () => {
        forwarded = true;
        return { content: [] };
      },
      { now },
    );
    await expect(failing).rejects.toThrow(Forbidden);
    expect(forwarded).toBe(false);
    expect((await trail()).map((e) => [e.phase, e.reason])).toEqual([
      ["requested", undefined],
      ["executed", "threw forbidden"],
    ]);
  });

  it("does not make a call it cannot audit", async () => {
    let ran = false;
    const fail = async () => Promise.reject(new Error("disk full"));
    const broken = { append: fail };
    await expect(
      auditCall(broken, base, pass, async () => {
        ran = true;
        return { content: [] };
      }),
    ).rejects.toThrow("disk full");
    expect(ran).toBe(false);
  });

  it("copies only who, which connection and which tool from the base, so arguments spread into it never reach the ledger", async () => {
    const sneaky = { ...base, arguments: { city: "x" } } as AuditedCall;
    let ran = false;
    await auditCall(
      ledger,
      sneaky,
      pass,
      async () => {
        ran = true;
        return { content: [] };
      },
      { now },
    );
    // The helper copies only the four fields it knows; the arguments never reach the ledger.
    expect(ran).toBe(true);
    expect(JSON.stringify(await ledger.page(temp.ws))).not.toContain("arguments");
  });
});
