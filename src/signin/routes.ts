import { Hono } from "hono";
import { createPkcePair } from "../crypto/pkce.ts";
import { randomSecret } from "../crypto/secrets.ts";
import { type OidcClient, SignInFailed } from "../identity/oidc-client.ts";
import { type Principal, withoutUnstated } from "../identity/principal.ts";
import { DEV_PRINCIPAL } from "../identity/providers/dev.ts";
import { principalFrom } from "../identity/providers/oidc.ts";
import type { Sessions } from "../identity/sessions.ts";
import type { UserDirectory } from "../identity/users.ts";
import type { OidcAuth } from "../instance/schema.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "../web/app-env.ts";
import { checkCookieOrigin } from "../web/cookie-origin.ts";
import { workspaceMcpUrl } from "../web/urls.ts";
import type { WorkspaceStore } from "../workspace/store.ts";
import { CALLBACK_PATH, type LoginState, LoginStateCookie, localReturnTo } from "./login-state.ts";
import {
  deactivatedPage,
  type HomeInvitation,
  homePage,
  noProviderCallbackPage,
  signedOutPage,
  signInErrorPage,
  signOutPage,
} from "./pages.ts";
import { withWorkosMembershipRole } from "./workos-membership.ts";

export interface SignInDeps {
  /** The configured OpenID provider; `undefined` under `dev`, where sign-in is implicit. */
  oidc: OidcClient | undefined;
  sessions: Sessions;
  users: UserDirectory;
  workspaces: Pick<WorkspaceStore, "listFor">;
  /** The person's pending invitations, shown on the home page to accept or decline. */
  invitationsFor: (principalId: string) => Promise<HomeInvitation[]>;
  /** The public base URL; known once the listener is bound (port 0 in tests). */
  publicUrl: () => string;
  log: Logger;
}

/** What the provider's `error` codes (RFC 6749 §4.1.2.1, OpenID Core §3.1.2.6) mean to the person. */
const PROVIDER_ERRORS: Record<string, string> = {
  access_denied: "The sign-in was declined, at the identity provider or by you.",
  login_required: "The identity provider needs you to sign in there first.",
  consent_required: "The identity provider needs your consent before it signs you in here.",
  interaction_required: "The identity provider needs you to do something there before it signs you in.",
  temporarily_unavailable: "The identity provider is temporarily unavailable.",
  server_error: "The identity provider hit an error.",
};

/**
 * Browser sign-in. Under `dev`, signing in is implicit: /auth/login starts a session for the
 * local developer. Under `oidc` and `workos`, it is the authorization code flow with PKCE,
 * state and nonce; the ID token is verified and mapped by the same rules as bearer tokens
 * (principalFrom), and a deactivated person gets no session.
 */
export function signInRoutes(deps: SignInDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { sessions, users, log } = deps;
  const { oidc } = deps;
  const loginState = new LoginStateCookie(
    sessions.cookieKey("login-state"),
    sessions.secureCookies,
    sessions.now,
  );

  /** A Principal for a live session, or undefined (with the cookie to clear, if one was invalid). */
  const signedIn = async (request: Request): Promise<{ principal?: Principal; clear?: string }> => {
    const found = await sessions.lookup(request);
    if (found.kind === "signed-in") return { principal: found.principal };
    if (found.kind === "invalid") return { clear: await sessions.end(request) };
    return {};
  };

  app.get("/", async (c) => {
    const { principal, clear } = await signedIn(c.req.raw);
    // Deactivation is checked per request, so a session that outlived it shows why it no longer works.
    if (principal && users.isDeactivated(principal.id)) return deactivatedPage(principal);
    const workspaces = principal
      ? deps.workspaces
          .listFor(principal.id)
          .map((ws) => ({ id: ws.id, name: ws.name, mcpUrl: workspaceMcpUrl(deps.publicUrl(), ws.id) }))
      : [];
    const invitations = principal ? await deps.invitationsFor(principal.id) : [];
    return withCookies(homePage(principal, workspaces, invitations), clear);
  });

  app.get("/auth/login", async (c) => {
    const returnTo = localReturnTo(c.req.query("return_to"));
    const current = await signedIn(c.req.raw);
    if (current.principal && !users.isDeactivated(current.principal.id)) {
      return redirect(returnTo);
    }
    if (!oidc) return finishSignIn(DEV_PRINCIPAL, returnTo, [current.clear]);

    const pkce = createPkcePair();
    const state: LoginState = {
      state: randomSecret(),
      nonce: randomSecret(),
      codeVerifier: pkce.verifier,
      returnTo,
    };
    let location: string;
    try {
      location = await oidc.authorizationUrl({
        redirectUri: redirectUri(),
        state: state.state,
        nonce: state.nonce,
        codeChallenge: pkce.challenge,
      });
    } catch (error) {
      return failure(error, returnTo);
    }
    return redirect(location, [await loginState.seal(state), current.clear]);
  });

  // The path is written out (not CALLBACK_PATH) so scripts/check-structure.mjs can read the route.
  app.get("/auth/callback", async (c) => {
    if (!oidc) return noProviderCallbackPage();
    // Whatever happens next, this sign-in's state is spent.
    const clear = loginState.clear();
    const stored = await loginState.open(c.req.raw);
    const query = c.req.query();
    const matches = stored !== undefined && query.state === stored.state;
    const returnTo = matches ? stored.returnTo : "/";

    if (query.error !== undefined) {
      const code = /^[A-Za-z0-9_.-]{1,64}$/.test(query.error) ? query.error : "unknown_error";
      log.warn({ reason: "provider_error", error: code }, "sign-in refused by the identity provider");
      return withCookies(
        signInErrorPage(
          "Sign-in did not finish",
          PROVIDER_ERRORS[code] ?? "The identity provider did not sign you in.",
          400,
          returnTo,
          `The provider answered "${code}".`,
        ),
        clear,
      );
    }
    if (!matches) {
      log.warn({ reason: stored ? "state_mismatch" : "no_login_state" }, "sign-in callback refused");
      return withCookies(
        signInErrorPage(
          "Sign-in expired",
          "This sign-in does not match one this browser started, or it took longer than ten minutes.",
          400,
        ),
        clear,
      );
    }
    // A sign-in never replaces a live session: /auth/login starts none for a signed-in browser,
    // so a login state here came from elsewhere (an injected cookie) or a race, and finishing
    // it could switch the browser to someone else's account unseen. Its code is not redeemed,
    // and its return path, which whoever sealed the state chose, is not followed (ADR 0072).
    const current = await signedIn(c.req.raw);
    if (current.principal && !users.isDeactivated(current.principal.id)) {
      log.warn({ reason: "already_signed_in" }, "sign-in callback refused");
      return withCookies(
        signInErrorPage(
          "Already signed in",
          `This browser is already signed in as ${current.principal.displayName}. Sign out first to sign in as someone else.`,
          409,
        ),
        clear,
      );
    }
    try {
      const metadata = await oidc.metadata();
      // RFC 9207: the response must come from our issuer, not from one a mix-up attack swapped in.
      if (query.iss !== undefined ? query.iss !== metadata.issuer : metadata.issParameterSupported) {
        log.warn({ reason: "issuer_mismatch" }, "sign-in callback refused");
        return withCookies(
          signInErrorPage(
            "Sign-in refused",
            "The answer to this sign-in did not come from this Atrium's identity provider.",
            400,
            returnTo,
          ),
          clear,
        );
      }
      if (!query.code) throw new SignInFailed("token_exchange_failed", "The provider sent no code.");
      const tokens = await oidc.exchangeCode(query.code, redirectUri(), stored.codeVerifier);
      const claims = await withWorkosMembershipRole(await oidc.signInClaims(tokens, stored.nonce), oidc.auth);
      return await finishSignIn(principalFromIdToken(claims, oidc.auth), returnTo, [clear]);
    } catch (error) {
      return withCookies(failure(error, returnTo), clear);
    }
  });

  app.get("/auth/logout", async (c) => {
    const { principal, clear } = await signedIn(c.req.raw);
    return withCookies(signOutPage(principal), clear);
  });

  app.post("/auth/logout", async (c) => {
    // Signing out changes the session like any cookie-authenticated write: a page on another
    // origin (another local port too) must not sign the person out.
    checkCookieOrigin(c.req.raw, deps.publicUrl());
    const cleared = await sessions.end(c.req.raw);
    log.info("signed out");
    return withCookies(signedOutPage(), cleared);
  });

  return app;

  function redirectUri(): string {
    return `${deps.publicUrl()}${CALLBACK_PATH}`;
  }

  async function finishSignIn(
    principal: Principal,
    returnTo: string,
    cookies: Array<string | undefined>,
  ): Promise<Response> {
    // Refused before anything is recorded: an offboarded person's sign-in changes nothing here.
    if (users.isDeactivated(principal.id)) {
      log.warn({ principal: principal.id }, "sign-in refused: the person is deactivated");
      return withCookies(deactivatedPage(principal), ...cookies);
    }
    await users.record(principal);
    const sessionCookie = await sessions.start(withoutUnstated(principal));
    log.info({ principal: principal.id }, "signed in");
    return redirect(returnTo, [...cookies, sessionCookie]);
  }

  function failure(error: unknown, returnTo: string): Response {
    if (!(error instanceof SignInFailed)) throw error;
    // Only the reason code and our own message are logged: never a token, a code or a cookie.
    log.warn({ reason: error.reason, detail: error.message }, "sign-in failed");
    if (error.reason === "provider_unavailable") {
      return signInErrorPage(
        "Identity provider unavailable",
        "Atrium could not reach the identity provider. Try again in a moment.",
        503,
        returnTo,
      );
    }
    return signInErrorPage(
      "Sign-in failed",
      "The identity provider's answer could not be used to sign you in.",
      502,
      returnTo,
    );
  }
}

/**
 * The person a sign-in vouches for. A sign-in always states their org role: a configured role
 * claim the provider leaves out means no role, since providers drop an empty `groups` claim
 * (Keycloak, Entra ID, Okta), so an admin taken out of every group is a member from their next
 * sign-in. Only a bearer token's silence leaves the recorded role as it was (ADR 0071).
 */
function principalFromIdToken(claims: Parameters<typeof principalFrom>[0], auth: OidcAuth): Principal {
  let principal: Principal;
  try {
    principal = principalFrom(claims, auth);
  } catch (error) {
    throw new SignInFailed("id_token_invalid", (error as Error).message);
  }
  const unstated = principal.unstated?.filter((field) => field !== "orgRole");
  const { unstated: _all, ...stated } = principal;
  return unstated && unstated.length > 0 ? { ...stated, unstated } : stated;
}

function redirect(location: string, cookies: Array<string | undefined> = []): Response {
  return withCookies(
    new Response(null, { status: 303, headers: { location, "cache-control": "no-store" } }),
    ...cookies,
  );
}

function withCookies(response: Response, ...cookies: Array<string | undefined>): Response {
  for (const cookie of cookies) if (cookie !== undefined) response.headers.append("set-cookie", cookie);
  return response;
}
