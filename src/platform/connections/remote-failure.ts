import { ProtocolError, SdkError, SdkHttpError } from "@modelcontextprotocol/client";
import { UnfinishedListing } from "../../sources/mcp-source.ts";
import { reauthorizationIn } from "./oauth/step-up.ts";

const REDACTED = "[redacted]";

/**
 * `text` with every one of the connection's own credential values taken out, as sent and in the
 * two forms a server most often echoes them in (a JSON string, a form or query parameter).
 */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let told = text;
  for (const secret of secrets) {
    if (secret === "") continue;
    for (const form of new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]))
      told = told.split(form).join(REDACTED);
  }
  return told;
}

/**
 * A failure that came from a connection's server, told again so that it may be logged, written to
 * a health file or shown to a member. An HTTP error keeps its status and the SDK's code but not
 * the body the server wrote (the SDK puts the body in the message, and a server that echoes its
 * request puts the credential there: test/integration/connections.test.ts "echoes"); any other
 * message loses the connection's credential values. The cause is not kept: a logger prints
 * causes too. Atrium's own errors about the connection (a re-authorization to do, a listing that
 * would not end) hold no server text and pass unchanged, since callers act on their types.
 */
export function retold(error: unknown, secrets: readonly string[]): unknown {
  const reauthorization = reauthorizationIn(error);
  if (reauthorization) return reauthorization;
  if (error instanceof UnfinishedListing) return error;
  if (error instanceof SdkHttpError)
    return new SdkHttpError(
      error.code,
      `The server answered HTTP ${error.status} (${error.code}); what it wrote is not repeated here.`,
      { status: error.status },
    );
  if (!(error instanceof Error)) return new Error(withoutSecrets(String(error), secrets));
  const message = withoutSecrets(error.message, secrets);
  // A JSON-RPC error is the server's words for the model (the router shows it); its data is not.
  if (error instanceof ProtocolError) return new ProtocolError(error.code, message);
  if (error instanceof SdkError) return new SdkError(error.code, message);
  const told = new Error(message);
  told.name = error.name;
  return told;
}
