// The client the MCP conformance suite's client-authorization scenarios run (scripts/conformance.mjs
// --suite client-auth, docs/conformance.md): Atrium's OAuth client (src/platform/connections/oauth/)
// driven as a one-shot MCP client. The suite appends the server URL and names the scenario in
// MCP_CONFORMANCE_SCENARIO (MCP_CONFORMANCE_CONTEXT carries a pre-registered client, when there is
// one). It connects, lists tools and calls the first one; a 401 makes it discover, get a client
// identity, authorize (the suite's authorization server approves at once: the code is read from
// the redirect, not served), redeem the code and retry; a 403 insufficient_scope re-authorizes for
// the union of the scopes asked so far and the challenged ones, once per new scope set — never
// asking again for a set it already holds, so a server that keeps answering 403 ends the run.
//
//   node --import tsx scripts/conformance-client.ts <server-url>
//
// Exit 0 when the calls succeeded; 1 with the reason on stderr when anything was refused.

import { randomBytes } from "node:crypto";
import {
  Client,
  computeScopeUnion,
  type FetchLike,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { clientFor, type OAuthClient } from "../src/platform/connections/oauth/client-identity.ts";
import {
  type AuthorizationTarget,
  discoverAuthorization,
} from "../src/platform/connections/oauth/discovery.ts";
import { memoryRegistrations } from "../src/platform/connections/oauth/registrations.ts";
import { insufficientScope } from "../src/platform/connections/oauth/step-up.ts";
import {
  beginAuthorization,
  redeemCode,
  refreshTokens,
  scopeToRequest,
  type TokenSet,
} from "../src/platform/connections/oauth/tokens.ts";

/** Never listened on: the suite's authorization server redirects at once, and the code is read from that redirect. */
const REDIRECT_URI = "http://127.0.0.1:3999/callback";
/**
 * The client ID metadata document URL this client plays an Atrium with an https public URL
 * under (the only case in which Atrium offers one). It is the URL the suite's `auth/basic-cimd`
 * expects as the client_id; the suite's authorization servers do not fetch it.
 */
const METADATA_DOCUMENT_URL = "https://conformance-test.local/client-metadata.json";

const say = (line: string) => process.stderr.write(`conformance-client: ${line}\n`);

interface Context {
  client_id?: string;
  client_secret?: string;
}

function readContext(): Context {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  return raw ? (JSON.parse(raw) as Context) : {};
}

/** An OAuth session for one server: what discovery found, who we are there, and the tokens. */
class Session {
  private target?: AuthorizationTarget;
  private client?: OAuthClient;
  private tokens?: TokenSet;
  /** The scope sets already asked for, so a repeated challenge does not loop. */
  private readonly asked = new Set<string>();
  private readonly registrations = memoryRegistrations();
  /** A refresh was tried since the last answer that was not a 401: another 401 means authorize. */
  private refreshed = false;

  constructor(
    private readonly serverUrl: string,
    private readonly context: Context,
  ) {}

  bearer(): string | undefined {
    return this.tokens?.accessToken;
  }

  accepted(): void {
    this.refreshed = false;
  }

  /**
   * After a 401: a refresh when the same authorization server still guards the server and a
   * refresh token is held; otherwise a new authorization for the challenged scope (or, with no
   * challenge, every scope the server lists). False when there is nothing new to try.
   */
  async onUnauthorized(challenge: Response): Promise<boolean> {
    const target = await discoverAuthorization(this.serverUrl, fetch, { challenge });
    if (this.tokens?.refreshToken && this.target?.issuer === target.issuer && !this.refreshed) {
      const held = this.tokens;
      this.tokens = undefined;
      this.refreshed = true;
      try {
        this.tokens = await refreshTokens(target, this.clientOrThrow(), held, fetch, Date.now);
        return true;
      } catch (error) {
        say(`refresh refused (${(error as Error).message}); authorizing again`);
      }
    }
    return this.authorize(target, computeScopeUnion(this.tokens?.scope, scopeToRequest(target)));
  }

  /** After a 403 insufficient_scope: step up to the union of what is held and what is required. */
  async onInsufficientScope(challenge: Response, required: string | undefined): Promise<boolean> {
    const target = this.target ?? (await discoverAuthorization(this.serverUrl, fetch, { challenge }));
    return this.authorize(target, computeScopeUnion(this.tokens?.scope, required));
  }

  private async authorize(target: AuthorizationTarget, scope: string | undefined): Promise<boolean> {
    // Sorted, so the same set asked in another order is still the same request.
    const key = `${target.issuer} ${[...new Set(scope?.split(" ").filter(Boolean))].sort().join(" ")}`;
    if (this.asked.has(key)) {
      say(`already asked ${target.issuer} for "${scope ?? ""}"; not asking again`);
      return false;
    }
    this.asked.add(key);
    if (this.target && this.target.issuer !== target.issuer) {
      say(`the server moved to authorization server ${target.issuer}; earlier tokens are dropped`);
      this.tokens = undefined;
    }
    this.target = target;
    this.client = await clientFor(target, {
      redirectUri: REDIRECT_URI,
      metadataDocumentUrl: METADATA_DOCUMENT_URL,
      configured: this.context.client_id
        ? [
            {
              issuer: target.issuer,
              clientId: this.context.client_id,
              clientSecret: this.context.client_secret,
            },
          ]
        : [],
      registrations: this.registrations,
      fetch,
    });
    const state = randomBytes(16).toString("base64url");
    const { authorizationUrl, codeVerifier } = await beginAuthorization(target, this.client, {
      redirectUri: REDIRECT_URI,
      state,
      ...(scope ? { scope } : {}),
    });
    const answer = await fetch(authorizationUrl, { redirect: "manual" });
    const location = answer.headers.get("location");
    if (location === null)
      throw new Error(`the authorization endpoint answered ${answer.status} without a redirect`);
    const callback = new URL(location);
    if (callback.searchParams.get("state") !== state)
      throw new Error("the authorization response's state is not ours");
    const code = callback.searchParams.get("code");
    if (code === null) {
      throw new Error(`the authorization server refused: ${callback.searchParams.get("error") ?? "no code"}`);
    }
    this.tokens = await redeemCode(
      target,
      this.client,
      {
        code,
        iss: callback.searchParams.get("iss") ?? undefined,
        codeVerifier,
        redirectUri: REDIRECT_URI,
        ...(scope ? { scope } : {}),
      },
      fetch,
      Date.now,
    );
    say(`authorized at ${target.issuer} (${this.client.how}) for "${scope ?? ""}"`);
    return true;
  }

  private clientOrThrow(): OAuthClient {
    if (!this.client) throw new Error("no client identity yet");
    return this.client;
  }
}

/** fetch with the session's bearer; a 401 or a 403 insufficient_scope authorizes and retries. */
function authorizedFetch(session: Session): FetchLike {
  return async (url, init) => {
    for (;;) {
      const headers = new Headers(init?.headers);
      const bearer = session.bearer();
      if (bearer) headers.set("authorization", `Bearer ${bearer}`);
      const response = await fetch(url, { ...init, headers });
      const insufficient = insufficientScope(response);
      if (response.status !== 401) session.accepted();
      if (response.status !== 401 && !insufficient) return response;
      const retry = insufficient
        ? await session.onInsufficientScope(response, insufficient.scope)
        : await session.onUnauthorized(response);
      if (!retry) return response;
      await response.body?.cancel();
    }
  };
}

async function main(): Promise<void> {
  const serverUrl = process.argv.at(-1);
  if (!serverUrl?.startsWith("http")) throw new Error("usage: conformance-client.ts <server-url>");
  say(`scenario ${process.env.MCP_CONFORMANCE_SCENARIO ?? "(none)"} against ${serverUrl}`);
  const session = new Session(serverUrl, readContext());
  const client = new Client(
    { name: "atrium-conformance-client", version: "1.0.0" },
    { capabilities: {}, versionNegotiation: { mode: "auto" } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), {
    fetch: authorizedFetch(session),
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const tool = tools[0];
  if (tool) await client.callTool({ name: tool.name, arguments: {} });
  await client.close();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
