import { describe, expect, it } from "vitest";
import {
  checkAuth,
  checkServerUrl,
  namesCredential,
  sealedCredentialIds,
  shownUrl,
} from "../../../../src/platform/connections/model.ts";

// A connection's URL is stored in its record and shown to every member: a credential in its query
// is refused, and sent instead as a query credential, sealed (adr/0108).

describe("a query parameter's name", () => {
  it.each([
    "api_key",
    "apikey",
    "apiKey",
    "X-Api-Key",
    "key",
    "token",
    "access_token",
    "accessToken",
    "AUTH",
    "client.secret",
    "password",
    "sig",
    "Signature",
    "X-Amz-Signature",
    "session_id",
    "X-Session-Id",
    "sessionId",
    "jwt",
  ])("%j names a credential", (name) => {
    expect(namesCredential(name)).toBe(true);
  });

  it.each([
    "region",
    "format",
    "v",
    "monkey",
    "tokenizer",
    "keyboard",
    "page",
    "session",
    "X-Session-Affinity",
  ])("%j names none", (name) => {
    expect(namesCredential(name)).toBe(false);
  });
});

describe("a connection's URL", () => {
  it("is refused with what to do when its query carries a credential, never repeating its value", () => {
    const refusal = (() => {
      try {
        checkServerUrl("https://api.example/mcp?region=eu&api_key=sk-live-123");
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    })();
    expect(refusal).toContain('"api_key"');
    expect(refusal).toContain('{"kind": "query", "param": "<name>", "value": "…"}');
    expect(refusal).not.toContain("sk-live-123");
  });

  it("is accepted with a query that names no credential", () => {
    expect(checkServerUrl("https://api.example/mcp?region=eu").href).toBe(
      "https://api.example/mcp?region=eu",
    );
  });

  it("is shown with the value of a credential parameter a record stored earlier holds replaced", () => {
    expect(shownUrl("https://api.example/mcp?region=eu&api_key=sk-live-123")).toBe(
      "https://api.example/mcp?region=eu&api_key=redacted",
    );
    expect(shownUrl("https://api.example/mcp?region=eu")).toBe("https://api.example/mcp?region=eu");
  });
});

describe("a query credential", () => {
  const url = new URL("https://api.example/mcp?region=eu");

  it("names its parameter and its value", () => {
    expect(checkAuth({ kind: "query", param: "api_key", value: "sk-1" }, url)).toEqual({
      kind: "query",
      param: "api_key",
      value: "sk-1",
    });
  });

  it.each([
    [{ kind: "query", param: "a b", value: "sk-1" }, '"auth.param"'],
    [{ kind: "query", param: "api_key", value: "" }, '"auth.value"'],
    [{ kind: "query", param: "api_key", value: "a\nb" }, '"auth.value"'],
    [{ kind: "query", param: "region", value: "sk-1" }, 'already has a "region" parameter'],
  ])("is refused when %j", (auth, said) => {
    expect(() => checkAuth(auth, url)).toThrow(said);
  });
});

describe("the sealed credentials a stored connection names", () => {
  it("are its static or query value, or its token set, and nothing for none or a pending OAuth", () => {
    const id = `cred_${"a".repeat(24)}`;
    expect(sealedCredentialIds({ kind: "static", header: "x-api-key", credential: id })).toEqual([id]);
    expect(sealedCredentialIds({ kind: "query", param: "api_key", credential: id })).toEqual([id]);
    expect(
      sealedCredentialIds({ kind: "oauth", issuer: "https://as.example", scopes: [], tokens: id }),
    ).toEqual([id]);
    expect(sealedCredentialIds({ kind: "oauth", issuer: "https://as.example", scopes: [] })).toEqual([]);
    expect(sealedCredentialIds({ kind: "none" })).toEqual([]);
  });
});
