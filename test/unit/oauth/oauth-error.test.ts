import { describe, expect, it } from "vitest";
import { OAUTH_ERROR_STATUS, OAuthError } from "../../../src/oauth/oauth-error.ts";
import { InvalidGrantError, InvalidScopeError } from "./oauth-error-kinds.ts";

describe("OAuthError", () => {
  it("answers with the RFC 6749 §5.2 body: the code and the description, nothing else", () => {
    const error = new OAuthError("invalid_grant", "The authorization code has already been used.");
    expect(error.toResponseObject()).toEqual({
      error: "invalid_grant",
      error_description: "The authorization code has already been used.",
    });
    expect(error.message).toBe("The authorization code has already been used.");
  });

  // The statuses v1 of the SDK's classes got at Atrium's endpoints; the OAuth integration tests
  // pin them on the wire, this pins the table they now come from.
  it("maps invalid_client to 401, too_many_requests to 429, server_error to 500, temporarily_unavailable to 503, the rest to 400", () => {
    expect(new OAuthError("invalid_client", "x").status).toBe(401);
    expect(new OAuthError("too_many_requests", "x").status).toBe(429);
    expect(new OAuthError("server_error", "x").status).toBe(500);
    expect(new OAuthError("temporarily_unavailable", "x").status).toBe(503);
    const fourHundreds = Object.entries(OAUTH_ERROR_STATUS)
      .filter(([, status]) => status === 400)
      .map(([code]) => code)
      .sort();
    expect(fourHundreds).toEqual([
      "access_denied",
      "invalid_client_metadata",
      "invalid_grant",
      "invalid_redirect_uri",
      "invalid_request",
      "invalid_scope",
      "invalid_target",
      "unauthorized_client",
      "unsupported_grant_type",
      "unsupported_response_type",
    ]);
  });

  it("a test's kind matches an OAuthError by its code only", () => {
    expect(new OAuthError("invalid_grant", "x")).toBeInstanceOf(InvalidGrantError);
    expect(new OAuthError("invalid_grant", "x")).not.toBeInstanceOf(InvalidScopeError);
    expect(new Error("invalid_grant")).not.toBeInstanceOf(InvalidGrantError);
    expect(new InvalidScopeError("x")).toBeInstanceOf(OAuthError);
  });
});
