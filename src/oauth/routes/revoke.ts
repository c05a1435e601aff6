import { OAuthTokenRevocationRequestSchema } from "@modelcontextprotocol/core";
import { Hono } from "hono";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../../web/app-env.ts";
import type { ClientRegistry } from "../clients.ts";
import { isRefreshTokenShaped } from "../grant-tokens.ts";
import type { Grants } from "../grants.ts";
import { OAuthError } from "../oauth-error.ts";
import type { AccessTokens } from "../tokens.ts";
import { authenticateClient } from "./client-auth.ts";
import { publicCors } from "./cors.ts";
import { type FormParams, NO_STORE, oauthBodyLimit, oauthEndpoint, readForm } from "./oauth-http.ts";

const MAX_REVOCATION_REQUEST_BYTES = 16 * 1024;

export interface RevokeDeps {
  clients: ClientRegistry;
  grants: Grants;
  tokens: AccessTokens;
  log: Logger;
}

/**
 * RFC 7009. Either kind of token revokes its whole grant: the refresh family and every
 * access token it issued. A token that is unknown, malformed or another client's changes
 * nothing and still gets 200, so the endpoint tells no one whether a token exists.
 */
export function revokeRoutes(deps: RevokeDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("/oauth/revoke", publicCors());
  app.use("/oauth/revoke", oauthBodyLimit(MAX_REVOCATION_REQUEST_BYTES));

  app.post(
    "/oauth/revoke",
    oauthEndpoint(deps.log, async (c) => {
      const form = await readForm(c);
      const caller = await authenticateClient(c, form, deps.clients, () => presentsIssued(form, deps));
      const parsed = OAuthTokenRevocationRequestSchema.safeParse({
        token: form.get("token"),
        token_type_hint: form.get("token_type_hint"),
      });
      if (!parsed.success) throw new OAuthError("invalid_request", "The token parameter is required.");
      // A token of no live grant: revoking it changes nothing, answered as any unknown token is.
      if (caller.kind === "nothing-issued") return c.json({}, 200, NO_STORE);
      const client = caller.client;
      const token = parsed.data.token;
      // The hint is only a hint (RFC 7009 §2.1): the token's own shape decides.
      if (isRefreshTokenShaped(token)) {
        await deps.grants.revokeRefreshToken(token, client.client_id);
      } else if (deps.tokens.isAtriumToken(token)) {
        const claims = await deps.tokens.inspect(token);
        if (claims && claims.clientId === client.client_id) await deps.grants.revoke(claims.grantId);
      }
      return c.json({}, 200, NO_STORE);
    }),
  );

  return app;
}

/** Whether the token is a refresh token of a live grant, or an access token this instance signed (adr/0156). */
async function presentsIssued(
  form: FormParams,
  deps: Pick<RevokeDeps, "grants" | "tokens">,
): Promise<boolean> {
  const token = form.get("token") ?? "";
  if (isRefreshTokenShaped(token)) return deps.grants.namesLiveGrant(token);
  return deps.tokens.isAtriumToken(token) && (await deps.tokens.inspect(token)) !== undefined;
}
