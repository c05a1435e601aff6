import { ProtocolError, SdkErrorCode, SdkHttpError } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { StepUpRequired } from "../../../../src/platform/connections/oauth/step-up.ts";
import { retold, withoutSecrets } from "../../../../src/platform/connections/remote-failure.ts";
import { UnfinishedListing } from "../../../../src/sources/mcp-source.ts";

const SECRET = 'key "with" spaces/and&more';

describe("a connection's failures, retold", () => {
  it("an HTTP error keeps its status and code, never the body the SDK put in its message and data", () => {
    const body = `I saw your headers: {"x-api-key":"${SECRET}"}`;
    const told = retold(
      new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${body}`, {
        status: 500,
        statusText: SECRET,
        text: body,
      }),
      [],
    ) as SdkHttpError;
    expect(told).toBeInstanceOf(SdkHttpError);
    expect(told.status).toBe(500);
    expect(told.code).toBe(SdkErrorCode.ClientHttpNotImplemented);
    expect(told.message).toContain("HTTP 500");
    expect(JSON.stringify({ ...told, message: told.message, stack: told.stack })).not.toContain("x-api-key");
  });

  it("a JSON-RPC error stays one, its message without the credential, its data dropped", () => {
    const told = retold(new ProtocolError(-32603, `bad key ${SECRET}`, { echoed: SECRET }), [SECRET]);
    expect(told).toBeInstanceOf(ProtocolError);
    expect(told).toMatchObject({ code: -32603, message: "bad key [redacted]", data: undefined });
  });

  it("any other message loses the credential as sent, JSON-escaped and form-encoded, and its cause", () => {
    const echoed = `${SECRET} ${JSON.stringify(SECRET)} refresh_token=${encodeURIComponent(SECRET)}`;
    const told = retold(new SyntaxError(echoed, { cause: new Error(SECRET) }), [SECRET]) as Error;
    expect(told.message).toBe('[redacted] "[redacted]" refresh_token=[redacted]');
    expect(told.name).toBe("SyntaxError");
    expect(told.cause).toBeUndefined();
  });

  it("passes Atrium's own errors about the connection unchanged, found in the cause chain", () => {
    const stepUp = new StepUpRequired("notes", "write", "https://atrium.example/go/1");
    expect(retold(new Error("fetch failed", { cause: stepUp }), [])).toBe(stepUp);
    const unfinished = new UnfinishedListing();
    expect(retold(unfinished, [])).toBe(unfinished);
  });

  it("an empty credential takes nothing out", () => {
    expect(withoutSecrets("nothing to hide", [""])).toBe("nothing to hide");
  });
});
