import { workspaceOfResource } from "../../web/urls.ts";
import type { ClientRegistry } from "../clients.ts";
import { OAuthError, type OAuthErrorCode, SEVERAL_RESOURCES } from "../oauth-error.ts";
import type { OAuthClientInformationFull } from "../oauth-types.ts";
import { redirectUriMatches } from "../redirect-uris.ts";
import { parseScopeParam } from "../scopes.ts";

/** What a client asks for at /oauth/authorize, once every parameter is checked. */
export interface RequestedAccess {
  redirectUri: string;
  /**
   * True when the request left redirect_uri out (the client registered one); the token
   * request may then leave it out too (OAuth 2.1 §4.1.3). Absent means it was presented.
   */
  redirectUriOmitted?: boolean;
  codeChallenge: string;
  scopes: string[];
  resource: string;
  workspaceId: string;
  state: string | undefined;
}

/** A request to /oauth/authorize that passed every check; what consent is asked for. */
export interface AuthorizationRequest extends RequestedAccess {
  client: OAuthClientInformationFull;
}

/**
 * Until the client and its redirect URI are known good, a problem is shown to the person
 * (redirecting to an unchecked URI would make Atrium an open redirector); after that, it
 * goes back to the client as an OAuth error (RFC 6749 §4.1.2.1).
 */
export type ParsedAuthorization =
  | { kind: "ok"; request: AuthorizationRequest }
  | { kind: "show"; status: number; message: string }
  | {
      kind: "redirect";
      redirectUri: string;
      state: string | undefined;
      error: OAuthErrorCode;
      description: string;
    };

/**
 * The parameters this endpoint reads that may appear once; any other is ignored (RFC 6749 §3.1),
 * repeated or not. `resource` may be repeated (RFC 8707 §2) and is read apart.
 */
const PARAMETERS = [
  "client_id",
  "redirect_uri",
  "state",
  "response_type",
  "code_challenge",
  "code_challenge_method",
  "scope",
] as const;
type Parameter = (typeof PARAMETERS)[number] | "resource";

/**
 * `caller` is charged if the client's metadata document must be fetched: the signed-in person, or
 * the connecting address for a request that fetches nothing (adr/0156).
 */
export async function parseAuthorizationRequest(
  query: URLSearchParams,
  clients: Pick<ClientRegistry, "find">,
  publicUrl: string,
  caller: string,
): Promise<ParsedAuthorization> {
  // RFC 6749 §3.1: a parameter may appear once. A repeated one is refused, never read as left
  // out: a repeated scope would otherwise be the default, wider than the client asked for.
  const repeated = PARAMETERS.find((name) => query.getAll(name).length > 1);
  if (repeated === "client_id" || repeated === "redirect_uri") {
    return show(400, `The ${repeated} parameter is repeated; the application must send it once.`);
  }
  // Each value is read only once its repeat would have been refused, so there is one or none. One
  // sent without a value is left out (RFC 6749 §3.1), as the token endpoint reads it.
  const single = (name: Parameter): string | undefined => query.get(name) || undefined;
  const clientId = single("client_id");
  if (!clientId) return show(400, "The request names no client (client_id is missing or empty).");
  let client: OAuthClientInformationFull | undefined;
  try {
    client = await clients.find(clientId, caller);
  } catch (error) {
    // Only an OAuthError's message is written for the person (a metadata document's reason).
    // Anything else is Atrium's own fault, whose message may name files under the data root:
    // it goes to the one error mapping, logged there, and the page gets its generic line
    // (test/integration/oauth-flow.test.ts "a client record that cannot be read").
    if (!(error instanceof OAuthError)) throw error;
    if (error.errorCode === "too_many_requests") return show(429, error.message);
    return show(400, `The client "${clientId}" could not be used: ${error.message}`);
  }
  if (!client)
    return show(400, `No client "${clientId}" is registered here; the application must register again.`);

  const presented = single("redirect_uri");
  // OAuth 2.1 lets a client with exactly one registered redirect URI leave it out.
  const redirectUri = presented ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0] : undefined);
  if (!redirectUri) return show(400, "The request has no redirect_uri and the client registered several.");
  if (!redirectUriMatches(client.redirect_uris, redirectUri)) {
    return show(400, `The redirect URI ${redirectUri} is not one this client registered.`);
  }

  // A repeated state is not carried back: neither value is the client's state.
  const state = repeated === "state" ? undefined : single("state");
  const fail = (error: OAuthErrorCode, description: string): ParsedAuthorization => ({
    kind: "redirect",
    redirectUri,
    state,
    error,
    description,
  });
  if (repeated) return fail("invalid_request", `The ${repeated} parameter is repeated.`);
  // Several resources are a well-formed request (RFC 8707 §2) for a token Atrium does not issue.
  if (query.getAll("resource").length > 1) {
    return fail("invalid_target", SEVERAL_RESOURCES);
  }
  if (single("response_type") !== "code") {
    return fail("unsupported_response_type", "Only response_type=code is supported.");
  }
  if (client.grant_types && !client.grant_types.includes("authorization_code")) {
    return fail("unauthorized_client", "This client did not register the authorization_code grant.");
  }
  const codeChallenge = single("code_challenge");
  if (!codeChallenge || !/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) {
    return fail("invalid_request", "A PKCE code_challenge (S256, 43 base64url characters) is required.");
  }
  // Without a method, RFC 7636 means `plain`, which is refused like an explicit one.
  if (single("code_challenge_method") !== "S256") {
    return fail("invalid_request", "code_challenge_method must be S256; plain PKCE is not accepted.");
  }
  const resource = single("resource");
  if (!resource) {
    return fail("invalid_request", "The resource parameter is required: the workspace's MCP URL (RFC 8707).");
  }
  const workspaceId = workspaceOfResource(publicUrl, resource);
  if (!workspaceId) {
    return fail(
      "invalid_target",
      `The resource must be one workspace MCP URL of this instance, ${publicUrl}/mcp/ws_….`,
    );
  }
  let scopes: string[];
  try {
    scopes = parseScopeParam(single("scope"));
  } catch (error) {
    return fail("invalid_scope", (error as Error).message);
  }
  return {
    kind: "ok",
    request: {
      client,
      redirectUri,
      ...(presented === undefined ? { redirectUriOmitted: true } : {}),
      codeChallenge,
      scopes,
      resource,
      workspaceId,
      state,
    },
  };
}

function show(status: number, message: string): ParsedAuthorization {
  return { kind: "show", status, message };
}
