import { type Context, Hono } from "hono";
import { verifyPkce } from "../../crypto/pkce.ts";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { ClientRegistry } from "../clients.ts";
import type { AuthorizationCodes, CodeGrant } from "../codes.ts";
import type { Grants } from "../grants.ts";
import { OAuthError, SEVERAL_RESOURCES } from "../oauth-error.ts";
import type { OAuthClientInformationFull, OAuthTokens } from "../oauth-types.ts";
import { parseScopeParam } from "../scopes.ts";
import type { AccessTokens } from "../tokens.ts";
import { authenticateClient } from "./client-auth.ts";
import { publicCors } from "./cors.ts";
import { type FormParams, NO_STORE, oauthBodyLimit, oauthEndpoint, readForm } from "./oauth-http.ts";

const MAX_TOKEN_REQUEST_BYTES = 16 * 1024;
/**
 * Several `resource` parameters are allowed by RFC 8707 §2 and refused for what they ask, a token
 * for several workspaces, as /oauth/authorize refuses them: invalid_target, not invalid_request.
 */
const REPEATABLE = { resource: () => new OAuthError("invalid_target", SEVERAL_RESOURCES) };

export interface TokenDeps {
  clients: ClientRegistry;
  codes: AuthorizationCodes;
  grants: Grants;
  tokens: AccessTokens;
  log: Logger;
}

/** The token endpoint: authorization_code (with PKCE) and refresh_token, nothing else. */
export function tokenRoutes(deps: TokenDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("/oauth/token", publicCors());
  app.use("/oauth/token", oauthBodyLimit(MAX_TOKEN_REQUEST_BYTES));

  app.post(
    "/oauth/token",
    oauthEndpoint(deps.log, async (c) => {
      const form = await readForm(c, REPEATABLE);
      const caller = await authenticateClient(c, form, deps.clients, () => presentsIssued(form, deps));
      const grantType = form.require("grant_type");
      if (grantType !== "authorization_code" && grantType !== "refresh_token") {
        throw new OAuthError(
          "unsupported_grant_type",
          `The grant type "${grantType.slice(0, 64)}" is not supported; use authorization_code or refresh_token.`,
        );
      }
      // The answer the exchange or refresh would give, without fetching the client's document.
      if (caller.kind === "nothing-issued") {
        throw new OAuthError("invalid_grant", `The ${NAMED[grantType]} is invalid, expired or already used.`);
      }
      if (grantType === "authorization_code") return exchangeCode(c, form, caller.client, deps);
      return refresh(c, form, caller.client, deps);
    }),
  );

  return app;
}

const NAMED = { authorization_code: "authorization code", refresh_token: "refresh token" } as const;

/** Whether the request carries a code Atrium stored, or a refresh token of a live grant (adr/0156). */
async function presentsIssued(form: FormParams, deps: Pick<TokenDeps, "codes" | "grants">): Promise<boolean> {
  const grantType = form.get("grant_type");
  if (grantType === "authorization_code") return deps.codes.isStored(form.get("code") ?? "");
  if (grantType === "refresh_token") return deps.grants.namesLiveGrant(form.get("refresh_token") ?? "");
  return false;
}

async function exchangeCode(
  c: Context<AppEnv>,
  form: FormParams,
  client: OAuthClientInformationFull,
  deps: TokenDeps,
): Promise<Response> {
  if (client.grant_types && !client.grant_types.includes("authorization_code")) {
    throw new OAuthError("unauthorized_client", "This client did not register the authorization_code grant.");
  }
  const code = form.require("code");
  const redirectUri = form.get("redirect_uri");
  const verifier = form.require("code_verifier");
  const resource = form.get("resource");
  const { grant, grantId, made, refreshToken, lifetime } = await deps.codes.redeem(
    code,
    (issued) => checkRedemption(issued, { clientId: client.client_id, redirectUri, verifier, resource }),
    async ({ grant, grantId, issuedAt }) => {
      const started = await deps.grants.create(
        {
          grantId,
          clientId: client.client_id,
          ...(client.client_name === undefined ? {} : { clientName: client.client_name }),
          principalId: grant.principalId,
          resource: grant.resource,
          scopes: grant.scopes,
          standingId: grant.standingId,
          membershipId: grant.membershipId,
        },
        { refresh: deps.clients.allowsRefresh(client), consentedAt: issuedAt },
      );
      return {
        grant,
        grantId,
        made: started.grant,
        refreshToken: started.refreshToken,
        lifetime: started.lifetime,
      };
    },
  );
  const access = await deps.tokens.issue({
    sub: grant.principalId,
    clientId: client.client_id,
    scopes: grant.scopes,
    audience: deps.grants.audienceOf(made),
    grantId,
    lifetime,
  });
  return tokenResponse(c, access, grant.scopes, refreshToken);
}

/** Whether this request may redeem a code issued for `issued`; a refusal leaves the code unspent. */
function checkRedemption(
  issued: CodeGrant,
  request: {
    clientId: string;
    redirectUri: string | undefined;
    verifier: string;
    resource: string | undefined;
  },
): void {
  if (issued.clientId !== request.clientId) {
    throw new OAuthError("invalid_grant", "The authorization code was issued to another client.");
  }
  // OAuth 2.1 §4.1.3: required, and identical, when the authorization request had it; a
  // client that left it out there (it registered one) may leave it out here, but one it
  // does send must still be the one the code was issued for.
  if (request.redirectUri === undefined) {
    if (!issued.redirectUriOmitted) {
      throw new OAuthError(
        "invalid_request",
        "redirect_uri is required: the authorization request included it.",
      );
    }
  } else if (issued.redirectUri !== request.redirectUri) {
    throw new OAuthError(
      "invalid_grant",
      "The redirect_uri is not the one the authorization code was issued for.",
    );
  }
  if (!verifyPkce(request.verifier, issued.codeChallenge)) {
    throw new OAuthError("invalid_grant", "The code_verifier does not match the code_challenge (S256).");
  }
  // RFC 8707: a client that names the resource again must name the same one.
  if (request.resource !== undefined && request.resource !== issued.resource) {
    throw new OAuthError(
      "invalid_target",
      "The resource is not the one the authorization code was issued for.",
    );
  }
}

async function refresh(
  c: Context<AppEnv>,
  form: FormParams,
  client: OAuthClientInformationFull,
  deps: TokenDeps,
): Promise<Response> {
  if (!deps.clients.allowsRefresh(client)) {
    throw new OAuthError("unauthorized_client", "This client did not register the refresh_token grant.");
  }
  const token = form.require("refresh_token");
  const scope = form.get("scope");
  const resource = form.get("resource");
  const refreshed = await deps.grants.refresh(token, {
    clientId: client.client_id,
    ...(scope === undefined ? {} : { scopes: parseScopeParam(scope) }),
    ...(resource === undefined ? {} : { resource }),
  });
  // A redeemed refresh token is the client's use, so it is kept 30 days after its grant ends;
  // naming the client, which anyone can, is not. A code exchange needs none of its own: the
  // consent minutes before it recorded one (authorize/routes.ts). The refresh token is rotated by
  // now: a failure to record the use must not cost the client the new one it is about to be sent.
  await deps.clients.recordUse(client.client_id).catch((error: unknown) => {
    deps.log.warn({ clientId: client.client_id, err: error }, "a refresh's client use could not be recorded");
  });
  const access = await deps.tokens.issue({
    sub: refreshed.grant.principalId,
    clientId: client.client_id,
    scopes: refreshed.scopes,
    audience: refreshed.resource,
    grantId: refreshed.grant.grantId,
    lifetime: refreshed.lifetime,
  });
  return tokenResponse(c, access, refreshed.scopes, refreshed.refreshToken);
}

function tokenResponse(
  c: Context<AppEnv>,
  access: { token: string; expiresIn: number },
  scopes: string[],
  refreshToken: string | undefined,
): Response {
  const body: OAuthTokens = {
    access_token: access.token,
    token_type: "Bearer",
    expires_in: access.expiresIn,
    scope: scopes.join(" "),
  };
  if (refreshToken !== undefined) body.refresh_token = refreshToken;
  return c.json(body, 200, NO_STORE);
}
