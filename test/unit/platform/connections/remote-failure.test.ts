import {
  OAuthError,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
} from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { StepUpRequired } from "../../../../src/platform/connections/oauth/step-up.ts";
import { retold } from "../../../../src/platform/connections/remote-failure.ts";
import { withoutSecrets } from "../../../../src/platform/connections/without-secrets.ts";
import { OutboundFailure } from "../../../../src/sources/guarded-fetch.ts";
import { UnfinishedListing } from "../../../../src/sources/mcp-source.ts";

const SECRET = 'key "with" spaces/and&more';
/** The start of the credential, as a server's reply quoted in an error would carry it. */
const PREFIX = SECRET.slice(0, 9);

/** How the client library wraps what failed its first request, as it does (data and cause). */
function probeFailed(cause: Error): SdkError {
  return new SdkError(
    SdkErrorCode.EraNegotiationFailed,
    `Version negotiation probe failed: ${cause.message}`,
    { cause },
    { cause },
  );
}

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

  it("a SyntaxError from a body that is not JSON keeps its name, never its text: no start of the credential either", () => {
    const body = `{"echo": ${SECRET}`;
    let parseError: unknown;
    try {
      JSON.parse(body);
    } catch (error) {
      parseError = error;
    }
    expect((parseError as Error).message).toContain(SECRET.slice(0, 5));
    const told = retold(parseError, [SECRET]) as Error;
    expect(told.name).toBe("SyntaxError");
    expect(told.message).toContain("not repeated");
    expect(told.message).not.toContain(SECRET.slice(0, 3));
    expect(told.cause).toBeUndefined();
  });

  it("an SdkError keeps its code and drops its text and what it wraps: a body, a content type, a ZodError's keys", () => {
    const wrapped = [
      probeFailed(new SyntaxError(`Unexpected token 'k', "${PREFIX}"... is not valid JSON`)),
      new SdkError(
        SdkErrorCode.ClientHttpUnexpectedContent,
        `Unexpected content type: text/html; ${PREFIX}`,
        {
          contentType: `text/html; ${PREFIX}`,
        },
      ),
      new SdkError(
        SdkErrorCode.InvalidResult,
        `Invalid result for tools/list: Unrecognized key: "${PREFIX}"`,
      ),
    ];
    for (const error of wrapped) {
      const told = retold(error, [SECRET]) as SdkError;
      expect(told).toBeInstanceOf(SdkError);
      expect(told.code).toBe(error.code);
      expect(told.message).toBe(
        `The MCP client failed (${error.code}); what the server sent is not repeated here.`,
      );
      expect(told.data).toBeUndefined();
    }
  });

  it("keeps a reason the guarded fetch or the operating system gave, found under the SDK's wrapping", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
      code: "ECONNREFUSED",
      syscall: "connect",
    });
    const late = new OutboundFailure("https://mcp.example did not answer within 30000 ms.");
    for (const cause of [refused, late]) {
      const told = retold(probeFailed(cause), []) as SdkError;
      expect(told.message).toBe(`The MCP client failed (ERA_NEGOTIATION_FAILED): ${cause.message}`);
      expect((retold(cause, []) as Error).message).toBe(cause.message);
    }
    // A TLS or parser error names no system call and may quote the server's certificate or bytes.
    const tls = Object.assign(new Error(`Host: x. is not in the cert's altnames: DNS:${PREFIX}`), {
      code: "ERR_TLS_CERT_ALTNAME_INVALID",
    });
    expect((retold(tls, []) as Error).message).not.toContain(PREFIX);
  });

  it("an authorization server's error keeps an OAuth code the client library knows, never its description", () => {
    const known = retold(new OAuthError("invalid_client", `unknown client ${PREFIX}`), [
      SECRET,
    ]) as OAuthError;
    expect(known).toBeInstanceOf(OAuthError);
    expect(known.code).toBe("invalid_client");
    expect(known.message).toBe(
      "The authorization server answered invalid_client; what it wrote is not repeated here.",
    );
    const made = retold(new OAuthError(`code ${PREFIX}`, "whatever"), [SECRET]) as OAuthError;
    expect(made.code).toBe("server_error");
    expect(made.message).not.toContain(PREFIX);
  });

  // Review 56: a refresh that failed on a fresh client's connect was told as the SDK's
  // ERA_NEGOTIATION_FAILED, and nothing said a token endpoint had answered.
  it("an authorization server's error under the SDK's wrapping is told by its code, as one alone is", () => {
    const refresh = new OAuthError("temporarily_unavailable", `down; refresh_token=${PREFIX}`);
    const told = retold(probeFailed(new Error("fetch failed", { cause: refresh })), [SECRET]) as OAuthError;
    expect(told).toBeInstanceOf(OAuthError);
    expect(told.code).toBe("temporarily_unavailable");
    expect(told.message).toBe(
      "The authorization server answered temporarily_unavailable; what it wrote is not repeated here.",
    );
    expect(told.cause).toBeUndefined();
    const made = retold(probeFailed(new OAuthError(`code ${PREFIX}`, PREFIX)), [SECRET]) as OAuthError;
    expect(made.code).toBe("server_error");
    expect(made.message).not.toContain(PREFIX);
  });

  it("the client library's check of a tool's result keeps its words, not the server's it quotes", () => {
    const told = retold(
      new ProtocolError(
        -32602,
        `Structured content does not match the tool's output schema: data/${PREFIX} must be string`,
      ),
      [SECRET],
    ) as ProtocolError;
    expect(told).toBeInstanceOf(ProtocolError);
    expect(told.code).toBe(-32602);
    expect(told.message).toBe(
      "Structured content does not match the tool's output schema; what the server returned is not repeated here.",
    );
  });

  it("passes Atrium's own errors about the connection unchanged, found in the cause chain", () => {
    const stepUp = new StepUpRequired("notes", "write", { go_url: "https://atrium.example/go/1" });
    expect(retold(new Error("fetch failed", { cause: stepUp }), [])).toBe(stepUp);
    const unfinished = new UnfinishedListing();
    expect(retold(unfinished, [])).toBe(unfinished);
  });

  it("an empty credential takes nothing out", () => {
    expect(withoutSecrets("nothing to hide", [""])).toBe("nothing to hide");
  });
});
