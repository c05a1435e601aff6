import { OAuthError } from "./oauth-error.ts";

export const SCOPE_READ = "mcp:read";
export const SCOPE_WRITE = "mcp:write";
/** Accepted and recorded; a refresh token is issued whenever the client registered the grant (SEP-2207). */
export const SCOPE_OFFLINE = "offline_access";
export const SUPPORTED_SCOPES = [SCOPE_READ, SCOPE_WRITE, SCOPE_OFFLINE];
export const DEFAULT_SCOPES = [SCOPE_READ, SCOPE_WRITE];

const SHOWN_SCOPE_CHARS = 64;

/**
 * The scope calling a tool needs: `mcp:read` for one its source marks read-only, `mcp:write` for
 * any other (an unknown tool too, so a name can never be cheaper than the tool it names).
 */
export function scopeForTool(tool: { annotations?: { readOnlyHint?: boolean } } | undefined): string {
  return tool?.annotations?.readOnlyHint === true ? SCOPE_READ : SCOPE_WRITE;
}

/**
 * A `scope` parameter (space-separated, RFC 6749 §3.3) as the scopes it names, deduplicated
 * and in SUPPORTED_SCOPES order; none named means DEFAULT_SCOPES. An unknown scope is refused
 * by name rather than dropped, so a client never believes it holds what it does not.
 */
export function parseScopeParam(value: string | undefined): string[] {
  const named = (value ?? "").split(" ").filter((scope) => scope !== "");
  if (named.length === 0) return [...DEFAULT_SCOPES];
  for (const scope of named) {
    if (!SUPPORTED_SCOPES.includes(scope)) {
      throw new OAuthError(
        "invalid_scope",
        `The scope "${scope.slice(0, SHOWN_SCOPE_CHARS)}" is not one this server grants; it grants ${SUPPORTED_SCOPES.join(", ")}.`,
      );
    }
  }
  return SUPPORTED_SCOPES.filter((scope) => named.includes(scope));
}
