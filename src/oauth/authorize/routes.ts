import { Hono } from "hono";
import type { Sessions } from "../../identity/sessions.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { checkCookieOrigin } from "../../web/cookie-origin.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { ClientRegistry } from "../clients.ts";
import type { AuthorizationCodes } from "../codes.ts";
import type { OAuthErrorCode } from "../oauth-error.ts";
import { describeRedirectUri } from "../redirect-uris.ts";
import { callerAddress } from "../routes/oauth-http.ts";
import { parseAuthorizationRequest } from "./authorization-request.ts";
import { consentPage, problemPage } from "./consent-page.ts";
import type { PendingAuthorizations } from "./pending.ts";

export interface AuthorizeDeps {
  clients: Pick<ClientRegistry, "find">;
  codes: Pick<AuthorizationCodes, "issue">;
  pending: PendingAuthorizations;
  sessions: Pick<Sessions, "lookup">;
  users: UserDirectory;
  workspaces: WorkspaceStore;
  publicUrl: () => string;
}

/**
 * /oauth/authorize: checks the request, sends the person through sign-in if their browser
 * has no session, checks they are a member of the workspace the `resource` names, and asks
 * for consent; the decision comes back as a POST from the consent page.
 */
export function authorizeRoutes(deps: AuthorizeDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get("/oauth/authorize", async (c) => {
    const url = new URL(c.req.url);
    const parsed = await parseAuthorizationRequest(
      url.searchParams,
      deps.clients,
      deps.publicUrl(),
      callerAddress(c),
    );
    if (parsed.kind === "show") return problemPage(parsed.status, parsed.message);
    if (parsed.kind === "redirect") {
      return c.redirect(
        errorRedirect(parsed.redirectUri, parsed.state, parsed.error, parsed.description, deps),
        303,
      );
    }
    const session = await deps.sessions.lookup(c.req.raw);
    if (session.kind !== "signed-in") {
      return c.redirect(`/auth/login?return_to=${encodeURIComponent(url.pathname + url.search)}`, 303);
    }
    const person = session.principal;
    const request = parsed.request;
    const refusal = await memberRefusal(deps, person.id, request.workspaceId);
    if (refusal) {
      return problemPage(
        403,
        refusal,
        errorRedirect(request.redirectUri, request.state, "access_denied", refusal, deps),
      );
    }
    const { client, ...access } = request;
    // Sealed into the page: showing it writes nothing (pending.ts).
    const { sealed } = deps.pending.create({
      ...access,
      clientId: client.client_id,
      principalId: person.id,
    });
    return consentPage({
      requestId: sealed,
      clientName: client.client_name ?? client.client_id,
      clientId: client.client_id,
      redirectTarget: describeRedirectUri(request.redirectUri),
      workspaceName: deps.workspaces.get(request.workspaceId)?.name ?? request.workspaceId,
      personName: person.email ? `${person.displayName} (${person.email})` : person.displayName,
      scopes: request.scopes,
    });
  });

  app.post("/oauth/authorize", async (c) => {
    const form = await c.req.parseBody();
    const id = typeof form.request === "string" ? form.request : "";
    const decision = form.decision;
    if (decision !== "approve" && decision !== "deny") {
      return problemPage(400, "The form must say approve or deny.");
    }
    checkCookieOrigin(c.req.raw, deps.publicUrl());
    const session = await deps.sessions.lookup(c.req.raw);
    const stored = deps.pending.open(id);
    if (!stored)
      return problemPage(
        400,
        "This request has expired or does not exist; start again from the application.",
      );
    // Only the person who was asked can answer.
    if (session.kind !== "signed-in" || session.principal.id !== stored.principalId) {
      return problemPage(
        403,
        "This consent request was made for someone else; sign in as that person or start again.",
      );
    }
    if (decision === "approve") {
      const refusal = await memberRefusal(deps, stored.principalId, stored.workspaceId);
      if (refusal) return problemPage(403, refusal);
    }
    const outcome = await deps.pending.decide(stored, decision);
    if (outcome.kind === "expired") {
      return problemPage(400, "This request has expired; start again from the application.");
    }
    if (outcome.kind === "conflict") {
      return problemPage(
        409,
        `This request was already ${outcome.earlier === "approve" ? "allowed" : "denied"}; start again from the application to change that.`,
      );
    }
    const pending = outcome.pending;
    if (decision === "deny") {
      return c.redirect(
        errorRedirect(
          pending.redirectUri,
          pending.state,
          "access_denied",
          "The person denied the request.",
          deps,
        ),
        303,
      );
    }
    const code = deps.pending.codeFor(pending);
    await deps.codes.issue(
      {
        clientId: pending.clientId,
        redirectUri: pending.redirectUri,
        ...(pending.redirectUriOmitted ? { redirectUriOmitted: true } : {}),
        codeChallenge: pending.codeChallenge,
        scopes: pending.scopes,
        resource: pending.resource,
        principalId: pending.principalId,
      },
      code,
    );
    return c.redirect(
      redirectWith(pending.redirectUri, { code, state: pending.state, iss: deps.publicUrl() }),
      303,
    );
  });

  return app;
}

async function memberRefusal(
  deps: AuthorizeDeps,
  principalId: string,
  workspaceId: string,
): Promise<string | undefined> {
  if (deps.users.isDeactivated(principalId)) return "This account has been deactivated by an org admin.";
  // One answer for "no such workspace" and "not a member", as everywhere else.
  if (deps.workspaces.roleOf(workspaceId, principalId) === undefined) {
    return "You are not a member of the workspace this application asked for (or it does not exist).";
  }
  return undefined;
}

function errorRedirect(
  redirectUri: string,
  state: string | undefined,
  error: OAuthErrorCode,
  description: string,
  deps: Pick<AuthorizeDeps, "publicUrl">,
): string {
  return redirectWith(redirectUri, { error, error_description: description, state, iss: deps.publicUrl() });
}

/** RFC 9207: every response carries `iss`, so a client talking to several servers can tell them apart. */
function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) url.searchParams.set(name, value);
  }
  return url.href;
}
