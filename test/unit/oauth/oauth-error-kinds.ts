import { OAuthError, type OAuthErrorCode } from "../../../src/oauth/oauth-error.ts";

// The tests were written against v1 of the SDK's per-code classes (`toBeInstanceOf(
// InvalidGrantError)`, `new InvalidTargetError(…)`). Atrium now has one OAuthError with a
// code, so each name here is a kind of it: `new` builds an OAuthError with that code, and
// `instanceof` is true for any OAuthError carrying that code, whoever constructed it. The
// assertions keep the meaning they had: a refusal of exactly this code.

interface OAuthErrorKind {
  new (description: string): OAuthError;
}

function oauthErrorKind(code: OAuthErrorCode): OAuthErrorKind {
  return class extends OAuthError {
    constructor(description: string) {
      super(code, description);
    }

    static override [Symbol.hasInstance](value: unknown): boolean {
      return value instanceof OAuthError && value.errorCode === code;
    }
  };
}

export const InvalidClientMetadataError = oauthErrorKind("invalid_client_metadata");
export const InvalidGrantError = oauthErrorKind("invalid_grant");
export const InvalidScopeError = oauthErrorKind("invalid_scope");
export const InvalidTargetError = oauthErrorKind("invalid_target");
export const InvalidTokenError = oauthErrorKind("invalid_token");
