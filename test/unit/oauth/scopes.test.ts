import { describe, expect, it } from "vitest";
import { DEFAULT_SCOPES, parseScopeParam, SUPPORTED_SCOPES } from "../../../src/oauth/scopes.ts";
import { InvalidScopeError } from "./oauth-error-kinds.ts";

describe("parseScopeParam", () => {
  it("gives the default scopes when none are named", () => {
    expect(parseScopeParam(undefined)).toEqual(DEFAULT_SCOPES);
    expect(parseScopeParam("")).toEqual(DEFAULT_SCOPES);
    expect(parseScopeParam("   ")).toEqual(DEFAULT_SCOPES);
    expect(DEFAULT_SCOPES).toEqual(["mcp:read", "mcp:write"]);
  });

  it("deduplicates and orders the named scopes as SUPPORTED_SCOPES does", () => {
    expect(parseScopeParam("offline_access  mcp:write mcp:read mcp:write")).toEqual(SUPPORTED_SCOPES);
    expect(parseScopeParam("mcp:read")).toEqual(["mcp:read"]);
  });

  it("refuses an unknown scope by name rather than dropping it", () => {
    expect(() => parseScopeParam("mcp:read openid")).toThrow(InvalidScopeError);
    expect(() => parseScopeParam("mcp:read openid")).toThrow(/"openid"/);
  });
});
