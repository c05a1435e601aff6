import { OAuthClientMetadataSchema } from "@modelcontextprotocol/core";
import { hidesText, isUnshowable } from "../text.ts";
import { OAuthError } from "./oauth-error.ts";
import type { OAuthClientMetadata } from "./oauth-types.ts";
import { canonicalRedirectUri, validateRedirectUri } from "./redirect-uris.ts";

// What a client may say about itself, whether it registers (RFC 7591) or publishes a
// client metadata document: the same rules, so neither door is looser than the other.

export type ClientAuthMethod = "none" | "client_secret_basic" | "client_secret_post";
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = [
  "none",
  "client_secret_basic",
  "client_secret_post",
];
export const CLIENT_GRANT_TYPES = ["authorization_code", "refresh_token"];
export const CLIENT_RESPONSE_TYPES = ["code"];
export const MAX_REDIRECT_URIS = 20;
/** The consent page shows the name in a sentence; a name has no business being longer. */
export const MAX_CLIENT_NAME_CHARS = 100;
/** Every other piece of text a client says about itself, which Atrium stores and returns. */
export const MAX_CLIENT_TEXT_CHARS = 2048;
export const MAX_CONTACTS = 20;
// Text a page may show, now (client_name) or later.
const TEXT_FIELDS = [
  "client_uri",
  "logo_uri",
  "tos_uri",
  "policy_uri",
  "scope",
  "software_id",
  "software_version",
] as const;

// Left out of what is stored and echoed (RFC 7591 §3.2.1 lets a server not register what it
// was sent). v2 of the SDK's schema added `application_type` (OIDC Dynamic Registration: "web"
// or "native"); v1 stripped it and Atrium has no rule for it yet. `jwks`, `jwks_uri` and
// `software_statement` serve client authentication by signed JWT and signed statements, which
// Atrium does not do: an open registration kept 60 KB of them per client, for good
// (test/unit/oauth/client-rules.test.ts "leaves out").
const ClientMetadataSchema = OAuthClientMetadataSchema.omit({
  application_type: true,
  jwks: true,
  jwks_uri: true,
  software_statement: true,
});

/** Client metadata with Atrium's defaults filled in and every rule checked. */
export interface CheckedClientMetadata extends OAuthClientMetadata {
  token_endpoint_auth_method: ClientAuthMethod;
  grant_types: string[];
  response_types: string[];
}

/**
 * Parses and checks client metadata; throws OAuthError `invalid_client_metadata`, or
 * `invalid_redirect_uri` (RFC 7591 §3.2.2) naming the URI and what is wrong with it.
 */
export function checkClientMetadata(input: unknown): CheckedClientMetadata {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new OAuthError("invalid_client_metadata", "The client metadata must be a JSON object.");
  }
  if (!Array.isArray((input as { redirect_uris?: unknown }).redirect_uris)) {
    throw new OAuthError("invalid_client_metadata", "redirect_uris is required: a list of redirect URIs.");
  }
  const parsed = ClientMetadataSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.join(".") || "(top level)";
    throw new OAuthError(
      "invalid_client_metadata",
      `The client metadata is not valid at ${at}: ${issue?.message}.`,
    );
  }
  const metadata = parsed.data;
  checkShownText(metadata);
  const uris = metadata.redirect_uris;
  if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    throw new OAuthError(
      "invalid_redirect_uri",
      `redirect_uris must list between 1 and ${MAX_REDIRECT_URIS} redirect URIs.`,
    );
  }
  for (const uri of uris) {
    const problem = validateRedirectUri(uri);
    if (problem) throw new OAuthError("invalid_redirect_uri", `The redirect URI ${uri} ${problem}.`);
  }
  const method = metadata.token_endpoint_auth_method ?? "none";
  if (!CLIENT_AUTH_METHODS.includes(method as ClientAuthMethod)) {
    throw new OAuthError(
      "invalid_client_metadata",
      `token_endpoint_auth_method "${method}" is not supported; use one of ${CLIENT_AUTH_METHODS.join(", ")}.`,
    );
  }
  const grantTypes = metadata.grant_types ?? CLIENT_GRANT_TYPES;
  const unknownGrant = grantTypes.find((grant) => !CLIENT_GRANT_TYPES.includes(grant));
  if (unknownGrant !== undefined) {
    throw new OAuthError(
      "invalid_client_metadata",
      `The grant type "${unknownGrant}" is not supported; use ${CLIENT_GRANT_TYPES.join(" and/or ")}.`,
    );
  }
  if (!grantTypes.includes("authorization_code")) {
    throw new OAuthError(
      "invalid_client_metadata",
      "grant_types must include authorization_code, the only way in.",
    );
  }
  const responseTypes = metadata.response_types ?? CLIENT_RESPONSE_TYPES;
  const unknownResponse = responseTypes.find((type) => !CLIENT_RESPONSE_TYPES.includes(type));
  if (unknownResponse !== undefined || responseTypes.length === 0) {
    throw new OAuthError("invalid_client_metadata", 'response_types may only be ["code"].');
  }
  return {
    ...metadata,
    // Stored canonical, so what the registry holds (and shows) is what a browser is sent to.
    redirect_uris: [...new Set(uris.map(canonicalRedirectUri))],
    token_endpoint_auth_method: method as ClientAuthMethod,
    grant_types: [...new Set(grantTypes)],
    response_types: [...new Set(responseTypes)],
  };
}

/**
 * The name is shown on the consent page, inside the sentence that asks for access: a bidi
 * control in it (`"Atrium Docs\u202E"`) reordered the trusted text after it, and an unbounded
 * one pushed the rest of the page away. So it is one line of at most MAX_CLIENT_NAME_CHARS
 * visible characters, and the rest of what a client says is bounded and visible too
 * (text.ts decides what a reader cannot see). The page also isolates it (`<bdi>`), for what
 * was stored before this rule.
 */
function checkShownText(metadata: OAuthClientMetadata): void {
  const name = metadata.client_name;
  if (name !== undefined) {
    if (name.trim() === "" || name.length > MAX_CLIENT_NAME_CHARS) {
      throw new OAuthError(
        "invalid_client_metadata",
        `client_name must be 1 to ${MAX_CLIENT_NAME_CHARS} characters.`,
      );
    }
    if (hasUnsafeCharacters(name)) {
      throw new OAuthError(
        "invalid_client_metadata",
        "client_name must be one line of visible text: no control, bidirectional or invisible characters.",
      );
    }
  }
  const texts: Array<[string, string | undefined]> = TEXT_FIELDS.map((field) => [field, metadata[field]]);
  const contacts = metadata.contacts ?? [];
  if (contacts.length > MAX_CONTACTS) {
    throw new OAuthError("invalid_client_metadata", `contacts may list at most ${MAX_CONTACTS} addresses.`);
  }
  for (const contact of contacts) texts.push(["contacts", contact]);
  for (const [field, text] of texts) {
    if (text === undefined) continue;
    if (text.length > MAX_CLIENT_TEXT_CHARS) {
      throw new OAuthError(
        "invalid_client_metadata",
        `${field} must be at most ${MAX_CLIENT_TEXT_CHARS} characters.`,
      );
    }
    if (hasUnsafeCharacters(text)) {
      throw new OAuthError(
        "invalid_client_metadata",
        `${field} must be visible text: no control, bidirectional or invisible characters.`,
      );
    }
  }
}

function hasUnsafeCharacters(text: string): boolean {
  return isUnshowable(text) || hidesText(text);
}
