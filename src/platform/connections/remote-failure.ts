import {
  OAuthError,
  OAuthErrorCode,
  ProtocolError,
  SdkError,
  SdkHttpError,
} from "@modelcontextprotocol/client";
import { OutboundFailure } from "../../sources/guarded-fetch.ts";
import { SourceRetired, UnfinishedListing } from "../../sources/mcp-source.ts";
import { reauthorizationIn } from "./oauth/step-up.ts";
import { withoutSecrets } from "./without-secrets.ts";

/** How far down a cause chain a local reason is looked for. */
const MAX_CAUSES = 5;
/**
 * The client library's own JSON-RPC errors about a tool's result (its output-schema check), which
 * quote what the server returned after the colon: only the words before it are the library's.
 */
const CLIENT_RESULT_CHECKS = [
  "Structured content does not match the tool's output schema:",
  "Failed to validate structured content:",
];
/** The OAuth error codes an authorization server's answer is told by: any other is its own text. */
const OAUTH_CODES: ReadonlySet<string> = new Set(Object.values(OAuthErrorCode));

/** An authorization server's `error` as it may be told: an OAuth code the SDK knows, else `server_error`. */
export function toldOAuthCode(code: string): string {
  return OAUTH_CODES.has(code) ? code : OAuthErrorCode.ServerError;
}

/**
 * A failure that came from a connection's server or its authorization server, told again so that
 * it may be logged, written to a health file or shown to a member (ADR 0067). Only a JSON-RPC error the server answered keeps
 * its words — they are the server's to the model — without the connection's credential values.
 * Every other failure keeps its kind (an HTTP status, the client library's code, an OAuth error
 * code, an error's name) and drops its text, which quotes what the server wrote in ways no list of values can catch: an
 * HTTP body, the start of a body that is not JSON in a SyntaxError, a key in a ZodError, a content
 * type (test/unit/platform/connections/remote-failure.test.ts). What is kept is a reason found in
 * the cause chain that the guarded fetch or the operating system wrote (a refused address, a
 * deadline, ECONNREFUSED). No cause or data is carried over: a logger prints them. Atrium's own
 * errors about the connection (a re-authorization to do, a listing that would not end) hold no
 * server text and pass unchanged, since callers act on their types.
 */
export function retold(error: unknown, secrets: readonly string[]): unknown {
  const reauthorization = reauthorizationIn(error);
  if (reauthorization) return reauthorization;
  if (error instanceof UnfinishedListing || error instanceof SourceRetired) return error;
  if (error instanceof SdkHttpError)
    return new SdkHttpError(
      error.code,
      `The server answered HTTP ${error.status} (${error.code}); what it wrote is not repeated here.`,
      { status: error.status },
    );
  // A token endpoint's answer (a refresh, a code exchange): its description, or the raw body the
  // client library quotes when the answer is not an OAuth error, may repeat the client secret,
  // the code and its verifier, or the refresh token it was sent. Looked for under the SDK's
  // wrapping: a refresh that fails on a client's connect arrives as its ERA_NEGOTIATION_FAILED,
  // which alone said nothing of a token (remote-failure.test.ts "… under the SDK's wrapping").
  const oauth = oauthErrorIn(error);
  if (oauth) {
    const code = toldOAuthCode(oauth.code);
    return new OAuthError(
      code,
      `The authorization server answered ${code}; what it wrote is not repeated here.`,
    );
  }
  if (error instanceof ProtocolError) {
    const check = CLIENT_RESULT_CHECKS.find((words) => error.message.startsWith(words));
    const message = check
      ? `${check.slice(0, -1)}; what the server returned is not repeated here.`
      : withoutSecrets(error.message, secrets);
    return new ProtocolError(error.code, message);
  }
  const found = localReason(error);
  const local = found === undefined ? undefined : withoutSecrets(found.message, secrets);
  if (error instanceof SdkError)
    return new SdkError(error.code, told(`The MCP client failed (${error.code})`, local));
  const name = error instanceof Error ? error.name : typeof error;
  const retelling = new Error(
    found === error && local !== undefined
      ? local
      : told(`The exchange with the server failed (${name})`, local),
  );
  retelling.name = name;
  return retelling;
}

/** `kind`, with the local reason under it, or saying that the server's words are left out. */
function told(kind: string, local: string | undefined): string {
  return local === undefined ? `${kind}; what the server sent is not repeated here.` : `${kind}: ${local}`;
}

/** The first authorization server's error in the cause chain. */
function oauthErrorIn(error: unknown): OAuthError | undefined {
  let current = error;
  for (let depth = 0; depth <= MAX_CAUSES && current instanceof Error; depth++) {
    if (current instanceof OAuthError) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * The first error in the cause chain that Atrium's guarded fetch or the operating
 * system wrote: neither quotes the server. A system error names a call (`connect ECONNREFUSED
 * 10.0.0.5:443`); a TLS or HTTP parser error, which names no call, can quote the server's
 * certificate or bytes and is not taken.
 */
function localReason(error: unknown): Error | undefined {
  let current = error;
  for (let depth = 0; depth <= MAX_CAUSES && current instanceof Error; depth++) {
    if (current instanceof OutboundFailure || typeof (current as NodeJS.ErrnoException).syscall === "string")
      return current;
    current = current.cause;
  }
  return undefined;
}
