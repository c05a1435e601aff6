import { type Context, Hono } from "hono";
import type { Sessions } from "../../identity/sessions.ts";
import type { UserDirectory } from "../../identity/users.ts";
import type { Logger } from "../../log.ts";
import { MAX_RETURN_TO_CHARS } from "../../signin/login-state.ts";
import { refusedForStorage } from "../../storage/storage-full.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { checkCookieOrigin } from "../../web/cookie-origin.ts";
import { PAGE_FORM_REFUSAL, readPageForm } from "../../web/page-form.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import { isClientMetadataUrl } from "../client-metadata.ts";
import type { ClientRegistry } from "../clients.ts";
import type { AuthorizationCodes } from "../codes.ts";
import type { OAuthErrorCode } from "../oauth-error.ts";
import { describeRedirectUri } from "../redirect-uris.ts";
import { callerAddress } from "../routes/oauth-http.ts";
import { parseAuthorizationRequest } from "./authorization-request.ts";
import { consentPage, problemPage, type WayBack } from "./consent-page.ts";
import type { ParkedRequests } from "./parked.ts";
import type { PendingAuthorizations } from "./pending.ts";

const AUTHORIZE_PATH = "/oauth/authorize";
/** Where a request parked during sign-in is resumed: `/oauth/authorize/resume/<id>`. */
const RESUME_PATH = `${AUTHORIZE_PATH}/resume`;

export interface AuthorizeDeps {
  clients: Pick<ClientRegistry, "find" | "recordUse">;
  codes: Pick<AuthorizationCodes, "issue">;
  pending: PendingAuthorizations;
  parked: ParkedRequests;
  sessions: Pick<Sessions, "lookup">;
  users: UserDirectory;
  workspaces: WorkspaceStore;
  publicUrl: () => string;
  log: Logger;
}

/**
 * /oauth/authorize: checks the request, sends the person through sign-in if their browser
 * has no session, checks they are a member of the workspace the `resource` names, and asks
 * for consent; the decision comes back as a POST from the consent page.
 */
export function authorizeRoutes(deps: AuthorizeDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { parked } = deps;

  /** Sends a browser with no session to sign in, to come back to this request. */
  const signInFirst = (c: Context<AppEnv>, query: string, parkedId: string | undefined): Response => {
    const returnTo = signInReturnTo(query, parkedId, parked, callerAddress(c));
    if (returnTo === undefined) {
      return problemPage(
        503,
        "This authorization request is too long to carry through sign-in, and no more can be kept right now. Sign in first at /auth/login, then start again from the application.",
      );
    }
    return c.redirect(`/auth/login?return_to=${encodeURIComponent(returnTo)}`, 303);
  };

  /** Answers an authorization request's query; `parkedId` when it was parked during sign-in. */
  const answer = async (c: Context<AppEnv>, query: string, parkedId?: string): Promise<Response> => {
    const params = new URLSearchParams(query);
    const session = await deps.sessions.lookup(c.req.raw);
    // A client ID metadata document is fetched only for a signed-in person, and charged to them
    // (adr/0156). Any page can make a visitor's browser send this GET (an <img>), and its
    // SameSite=Lax session cookie does not ride along: fetched for a signed-out GET and charged to
    // the address, a flood of those spent the address's allowance, and a real client's sign-in
    // from it was refused (test/integration/oauth-client-metadata-allowance.test.ts).
    if (session.kind !== "signed-in" && namesDocument(params)) return signInFirst(c, query, parkedId);
    const caller = session.kind === "signed-in" ? personCaller(session.principal.id) : callerAddress(c);
    const parsed = await parseAuthorizationRequest(params, deps.clients, deps.publicUrl(), caller);
    if (parsed.kind === "show") return problemPage(parsed.status, parsed.message);
    if (parsed.kind === "redirect") {
      // Shown, never followed on its own: anyone can register a client whose redirect URI is
      // theirs, and a link to this instance that bounced straight there would lend its name to
      // a phishing page (RFC 9700 §4.11.2, adr/0126). The person follows it or not.
      return problemPage(
        400,
        parsed.description,
        wayBack(parsed.redirectUri, parsed.state, parsed.error, parsed.description, deps),
      );
    }
    if (session.kind !== "signed-in") return signInFirst(c, query, parkedId);
    const person = session.principal;
    const request = parsed.request;
    const refusal = await memberRefusal(deps, person.id, request.workspaceId);
    if (refusal) {
      return problemPage(
        403,
        refusal,
        wayBack(request.redirectUri, request.state, "access_denied", refusal, deps),
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
  };

  app.get("/oauth/authorize", (c) => answer(c, new URL(c.req.url).search.slice(1)));
  app.get(`${RESUME_PATH}/:id`, (c) => {
    const id = c.req.param("id");
    const query = parked.find(id);
    if (query === undefined) {
      return problemPage(
        400,
        "This authorization request is no longer kept (it waits ten minutes for you to sign in); start again from the application.",
      );
    }
    return answer(c, query, id);
  });

  /** The consent page's answer: a code for the application, or its refusal. */
  const decide = async (c: Context<AppEnv>): Promise<Response> => {
    const form = await readPageForm(c);
    if (form === undefined) return problemPage(415, PAGE_FORM_REFUSAL);
    const id = form.get("request") ?? "";
    const decision = form.get("decision");
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
    // Read before the person's deactivation is checked, and carried by the code: a deactivation
    // that lands after it (and the reactivation after that) refuses the code, whatever the clock
    // reads (ADR 0169, amended later still).
    const { standingId } = deps.users.standingOf(stored.principalId);
    // Read before the membership is checked, as the standing id is before the deactivation
    // check: a removal and a re-add that land after it refuse the code (ADR 0169, amended).
    const member = deps.workspaces.memberOf(stored.workspaceId, stored.principalId);
    if (decision === "approve") {
      const refusal = await memberRefusal(deps, stored.principalId, stored.workspaceId);
      if (refusal) return problemPage(403, refusal);
      // The consent is the client's use, recorded before its code exists: the client is then kept
      // 30 days, for the exchange that follows. Showing the page was none, as any page can make a
      // browser ask for it; a client swept since then gets no code for an id nobody knows any more.
      if (!(await deps.clients.recordUse(stored.clientId))) {
        return problemPage(
          400,
          `No client "${stored.clientId}" is registered here any more; the application must register again.`,
        );
      }
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
        ...(standingId === undefined ? {} : { standingId }),
        ...(member?.membershipId === undefined ? {} : { membershipId: member.membershipId }),
      },
      code,
    );
    return c.redirect(
      redirectWith(pending.redirectUri, { code, state: pending.state, iss: deps.publicUrl() }),
      303,
    );
  };

  // The person answering is at a browser: a full disk is a page that says so, not the REST
  // envelope the app's error handler would send (adr/0165).
  app.post("/oauth/authorize", async (c) => {
    try {
      return await decide(c);
    } catch (error) {
      const full = refusedForStorage(error, deps.log, { requestId: c.get("requestId") });
      if (full === undefined) throw error;
      return problemPage(full.status, full.message);
    }
  });

  return app;
}

/**
 * Where sign-in brings the browser back: this very request, or, when that is longer than
 * sign-in carries (MAX_RETURN_TO_CHARS: a long `state`, a URL client_id), the request
 * parked under a short id (ADR 0073). `undefined` when it is too long and cannot be parked.
 */
function signInReturnTo(
  query: string,
  parkedId: string | undefined,
  parked: ParkedRequests,
  caller: string,
): string | undefined {
  if (parkedId !== undefined) return `${RESUME_PATH}/${parkedId}`;
  const whole = query === "" ? AUTHORIZE_PATH : `${AUTHORIZE_PATH}?${query}`;
  if (whole.length <= MAX_RETURN_TO_CHARS) return whole;
  const id = parked.park(query, caller);
  return id === undefined ? undefined : `${RESUME_PATH}/${id}`;
}

/** Whether the request names its client by one metadata document URL, which finding it would fetch. */
function namesDocument(params: URLSearchParams): boolean {
  const [clientId, ...more] = params.getAll("client_id");
  return clientId !== undefined && more.length === 0 && isClientMetadataUrl(clientId);
}

/** Whom a signed-in person's document fetches are charged to: the person, whatever address they use. */
function personCaller(principalId: string): string {
  return `person:${principalId}`;
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

/** An error's way back to the application, shown on a page for the person to follow. */
function wayBack(
  redirectUri: string,
  state: string | undefined,
  error: OAuthErrorCode,
  description: string,
  deps: Pick<AuthorizeDeps, "publicUrl">,
): WayBack {
  return {
    href: errorRedirect(redirectUri, state, error, description, deps),
    target: describeRedirectUri(redirectUri),
  };
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
