import type { Context } from "hono";
import type { AppEnv } from "../../web/app-env.ts";
import { isClientMetadataUrl } from "../client-metadata.ts";
import type { ClientRegistry, PresentedClientAuth } from "../clients.ts";
import { OAuthError } from "../oauth-error.ts";
import type { OAuthClientInformationFull } from "../oauth-types.ts";
import { callerAddress, type FormParams } from "./oauth-http.ts";

const BASIC = /^basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i;
const REFUSED =
  "Client authentication failed: the client is unknown, the secret is wrong, or it is not the method the client registered.";

/**
 * Who called: the client, or, for a client named by a metadata document URL, `nothing-issued`
 * when the request presents nothing Atrium issued (no stored code, no token of a live grant), so
 * whatever it asks would change nothing, and its document is not fetched.
 */
export type CallingClient =
  | { kind: "client"; client: OAuthClientInformationFull }
  | { kind: "nothing-issued" };

/**
 * Who is calling the token or revocation endpoint: `none` (client_id in the body),
 * `client_secret_basic` or `client_secret_post`, and only the method the client
 * registered. Every failure is invalid_client.
 *
 * A client ID metadata document is fetched only when `presentsIssued` says the request carries
 * something Atrium issued (adr/0156). Any page can make its visitor's browser POST a form here
 * (no preflight), naming any URL: fetched and charged to the address, those spent the address's
 * allowance and a real client's exchange from it was refused
 * (test/integration/oauth-endpoints.test.ts "a flood of token and revocation requests").
 */
export async function authenticateClient(
  c: Context<AppEnv>,
  form: FormParams,
  clients: Pick<ClientRegistry, "find" | "authenticate">,
  presentsIssued: () => Promise<boolean>,
): Promise<CallingClient> {
  const header = c.req.header("authorization");
  const bodyId = form.get("client_id");
  const bodySecret = form.get("client_secret");
  let clientId: string;
  let presented: PresentedClientAuth;
  if (header !== undefined) {
    const basic = parseBasic(header);
    if (bodySecret !== undefined) {
      throw new OAuthError(
        "invalid_request",
        "Use one client authentication method: Basic or client_secret, not both.",
      );
    }
    if (bodyId !== undefined && bodyId !== basic.clientId) {
      throw new OAuthError(
        "invalid_client",
        "The client_id in the body is not the one in the Authorization header.",
      );
    }
    clientId = basic.clientId;
    presented = { method: "client_secret_basic", secret: basic.secret };
  } else {
    if (bodyId === undefined) {
      throw new OAuthError(
        "invalid_client",
        "No client authentication: send client_id (and the secret, if the client has one).",
      );
    }
    clientId = bodyId;
    presented =
      bodySecret === undefined ? { method: "none" } : { method: "client_secret_post", secret: bodySecret };
  }
  if (isClientMetadataUrl(clientId) && !(await presentsIssued())) return { kind: "nothing-issued" };
  const client = await clients.find(clientId, callerAddress(c));
  if (!client || !clients.authenticate(client, presented)) throw new OAuthError("invalid_client", REFUSED);
  return { kind: "client", client };
}

/** RFC 6749 §2.3.1: Basic over the form-urlencoded client id and secret. */
function parseBasic(header: string): { clientId: string; secret: string } {
  const encoded = BASIC.exec(header)?.[1];
  if (encoded === undefined) {
    throw new OAuthError(
      "invalid_client",
      "The Authorization header must carry HTTP Basic client credentials.",
    );
  }
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  try {
    if (colon === -1) throw new Error("no colon");
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    if (clientId === "" || secret === "") throw new Error("empty part");
    return { clientId, secret };
  } catch {
    throw new OAuthError(
      "invalid_client",
      "The Authorization header is not valid HTTP Basic client credentials.",
    );
  }
}

function formDecode(value: string): string {
  return decodeURIComponent(value.replaceAll("+", " "));
}
