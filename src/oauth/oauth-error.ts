// The OAuth errors the authorization server answers with. v1 of the MCP SDK had one class per
// code (server/auth/errors.js); v2 has no one-to-one equivalent (issue 8), so Atrium keeps
// one table of the codes it uses and one error class that carries a code from it. The routes'
// one mapping (routes/oauth-http.ts) turns an OAuthError into the RFC 6749 §5.2 body.

/**
 * Every OAuth error code Atrium sends, and the HTTP status it gets when an endpoint answers
 * with a JSON error body. Codes sent only in an authorization redirect (RFC 6749 §4.1.2.1)
 * travel in a 303 instead; their status here is §5.2's default and is never used.
 */
export const OAUTH_ERROR_STATUS = {
  // RFC 6749 §5.2 (token endpoint) and §4.1.2.1 (authorization redirect)
  invalid_request: 400,
  // §5.2 allows 400 or 401; 401 because a client that tried Basic must be told so.
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  access_denied: 400,
  unsupported_response_type: 400,
  server_error: 500,
  // RFC 8707 §2: a resource the grant was not for
  invalid_target: 400,
  // RFC 7591 §3.2.2: registration and client metadata documents
  invalid_redirect_uri: 400,
  invalid_client_metadata: 400,
  // RFC 6750 §3.1: an access token Atrium will not honour. No OAuth endpoint answers with it:
  // the MCP bearer check (http/middleware/authenticate.ts) turns it into its own 401 challenge.
  invalid_token: 401,
  // Not an RFC code: the name v1 of the SDK gave a rate limit's refusal, which clients have seen.
  too_many_requests: 429,
  // RFC 6749 §4.1.2.1's code for "temporary overloading", with the 503 it stands in for in a
  // redirect: registration refused because the instance holds all the unused clients it keeps
  // (ADR 0156). 429 would blame the caller, who sent nothing too often.
  temporarily_unavailable: 503,
} as const satisfies Record<string, 400 | 401 | 429 | 500 | 503>;

export type OAuthErrorCode = keyof typeof OAUTH_ERROR_STATUS;

/**
 * Why several `resource` parameters are refused, at /oauth/authorize and /oauth/token alike, as
 * invalid_target: RFC 8707 §2 allows them, for a token Atrium does not issue (ADR 0016, amended).
 */
export const SEVERAL_RESOURCES = "A token here is for one workspace: send one resource, its MCP URL.";

/** An RFC 6749 §5.2 error body; error_uri is never sent. */
export interface OAuthErrorBody {
  error: OAuthErrorCode;
  error_description: string;
}

/** A refusal to say to an OAuth client: a code from the table, and a description (the message). */
export class OAuthError extends Error {
  constructor(
    readonly errorCode: OAuthErrorCode,
    description: string,
  ) {
    super(description);
    this.name = "OAuthError";
  }

  get status(): (typeof OAUTH_ERROR_STATUS)[OAuthErrorCode] {
    return OAUTH_ERROR_STATUS[this.errorCode];
  }

  toResponseObject(): OAuthErrorBody {
    return { error: this.errorCode, error_description: this.message };
  }
}
