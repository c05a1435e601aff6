import type { Context, MiddlewareHandler } from "hono";
import { Unauthenticated } from "../../errors.ts";
import { bearerToken } from "../../identity/bearer.ts";
import type { Principal } from "../../identity/principal.ts";
import type { CredentialSource, IdentityProvider } from "../../identity/provider.ts";
import type { Sessions } from "../../identity/sessions.ts";
import { refuseDeactivated, type UserDirectory } from "../../identity/users.ts";
import { isWorkspaceId } from "../../ids.ts";
import { resourceMetadataUrl } from "../../oauth/metadata.ts";
import { DEFAULT_SCOPES } from "../../oauth/scopes.ts";
import type { AccessTokens } from "../../oauth/tokens.ts";
import type { AppEnv } from "../../web/app-env.ts";
import { checkCookieOrigin } from "../../web/cookie-origin.ts";
import { workspaceMcpUrl } from "../../web/urls.ts";

/** The ways a request can say who it is, and the directory that knows each person. */
export interface Authenticators {
  provider: IdentityProvider;
  sessions: Pick<Sessions, "lookup">;
  tokens: Pick<AccessTokens, "isAtriumToken" | "verify">;
  users: UserDirectory;
  publicUrl: () => string;
}

const MCP_PATH = /^\/mcp\/([^/]+)$/;

/** Who an MCP request is, and what its access token granted when one authenticated it. */
export interface McpCaller {
  principal: Principal;
  grant?: { clientId: string; scopes: string[] };
}

/**
 * /mcp/ws_…: an Atrium access token whose audience is exactly this URL, or whatever the
 * identity provider accepts here (the developer under `dev`; a first-party client's token).
 * A browser's session cookie is never enough at an MCP URL. A refusal carries the
 * challenge that sends a client to this workspace's protected-resource metadata. The person is
 * recorded and a deactivated one refused. The hono middleware below and the MCP front door
 * (http/mcp-front-door.ts) both call this, so the check exists once.
 */
export async function authenticateMcpCaller(
  auth: Authenticators,
  workspaceId: string,
  request: CredentialSource,
): Promise<McpCaller> {
  const header = request.headers.get("authorization");
  const token = header === null ? undefined : bearerToken(header);
  let principal: Principal | undefined;
  let grant: McpCaller["grant"];
  try {
    if (token !== undefined && auth.tokens.isAtriumToken(token)) {
      const claims = await auth.tokens
        .verify(token, workspaceMcpUrl(auth.publicUrl(), workspaceId))
        .catch(() => {
          throw new Unauthenticated("The access token is invalid, expired or not for this workspace URL.");
        });
      principal = await knownPerson(auth.users, claims.sub);
      grant = { clientId: claims.clientId, scopes: claims.scopes };
    } else {
      principal = await auth.provider.authenticate(request, "mcp");
    }
    if (!principal) throw new Unauthenticated();
  } catch (error) {
    if (!(error instanceof Unauthenticated)) throw error;
    throw new Unauthenticated(
      error.message,
      mcpChallenge(auth.publicUrl(), workspaceId, token !== undefined),
    );
  }
  const admitted = await admittedPerson(auth.users, principal);
  return grant ? { principal: admitted, grant } : { principal: admitted };
}

export function authenticateMcp(auth: Authenticators): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const workspaceId = MCP_PATH.exec(c.req.path)?.[1] ?? "";
    const caller = await authenticateMcpCaller(auth, workspaceId, c.req.raw);
    if (caller.grant) c.set("grant", caller.grant);
    c.set("principal", caller.principal);
    await next();
  };
}

/**
 * /v1/…: a signed-in browser's session cookie, or a bearer credential the identity
 * provider accepts (under `dev`, no credential at all is the developer). A cookie that
 * is forged, expired or signed out is refused, never read as "no cookie".
 */
export function authenticateRest(auth: Authenticators): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = requestBearer(c);
    if (token !== undefined && auth.tokens.isAtriumToken(token)) {
      throw new Unauthenticated(
        "Atrium access tokens are for the workspace MCP URL they were issued for; REST takes a session or a provider token.",
      );
    }
    const ambient = c.req.header("authorization") === undefined;
    if (ambient) {
      const session = await auth.sessions.lookup(c.req.raw);
      if (session.kind === "invalid") {
        throw new Unauthenticated("Your session has ended or is not valid: sign in again at /auth/login.");
      }
      if (session.kind === "signed-in") {
        checkCookieOrigin(c.req.raw, auth.publicUrl());
        // The sign-in recorded this person; a session is not a fresh statement about them. What
        // the directory holds now is: a later sign-in may have changed their org role, or a
        // provider token their email, since this session began (a demoted org admin stays
        // demoted). A token's org role is never recorded (ADR 0071).
        const current = (await auth.users.get(session.principal.id)) ?? session.principal;
        await admitPerson(c, auth.users, asPrincipal(current), { record: false });
        return next();
      }
    }
    const principal = await auth.provider.authenticate(c.req.raw, "rest");
    if (!principal) throw new Unauthenticated();
    // Without an Authorization header the provider vouched from nothing a page must set itself:
    // under `dev`, no credential is the developer, as ambient as a cookie (ADR 0026).
    if (ambient) checkCookieOrigin(c.req.raw, auth.publicUrl(), "A request without a credential");
    await admitPerson(c, auth.users, principal);
    await next();
  };
}

function requestBearer(c: Context<AppEnv>): string | undefined {
  const header = c.req.header("authorization");
  return header === undefined ? undefined : bearerToken(header);
}

/** An Atrium token names a person by id; they must be someone who has signed in here. */
async function knownPerson(users: UserDirectory, principalId: string): Promise<Principal> {
  const profile = await users.get(principalId);
  if (!profile)
    throw new Unauthenticated("The access token names nobody this instance knows; authorize again.");
  return asPrincipal(profile);
}

/** A person as the directory holds them, as the principal a route sees. */
function asPrincipal(person: Principal): Principal {
  return { id: person.id, displayName: person.displayName, email: person.email, orgRole: person.orgRole };
}

/**
 * Records what the credential states about the person (never blanking what it leaves out,
 * users.ts, and never a token's org role, ADR 0071), refuses a deactivated person, and hands
 * the route the person as the directory holds them with this credential's statements on top.
 */
async function admitPerson(
  c: Context<AppEnv>,
  users: UserDirectory,
  principal: Principal,
  options: { record: boolean } = { record: true },
): Promise<void> {
  c.set("principal", await admittedPerson(users, principal, options));
  // What a body read outside any workspace asks once the body has come (a workspace's gate puts
  // its own in place, which asks this too): a deactivation meanwhile holds (adr/0129).
  c.set("admitAgain", () => refuseDeactivated(users, principal.id));
}

/** admitPerson without the context: the principal as the route sees it. */
async function admittedPerson(
  users: UserDirectory,
  principal: Principal,
  options: { record: boolean } = { record: true },
): Promise<Principal> {
  // Rechecked on every request, so deactivation cuts the person's next call on every surface;
  // before recording, so an offboarded person's credential changes nothing in the directory.
  refuseDeactivated(users, principal.id);
  if (options.record) {
    await users.record(principal);
    // Again: a deactivation may have come while the record was written.
    refuseDeactivated(users, principal.id);
  }
  return actingPerson(principal, await users.get(principal.id));
}

/**
 * Who a request acts as: the person as the directory holds them, with what this request's
 * credential states on top — its name and email (just recorded) and a bearer token's org role,
 * which holds for this request alone and was not recorded (ADR 0071). A part the credential
 * leaves out is the directory's, not a fallback: a token without the org-role claim, or any
 * WorkOS token under `auth.organizationId`, acts with the role the person signed in with.
 */
function actingPerson(principal: Principal, held: Principal | undefined): Principal {
  const unstated = principal.unstated ?? [];
  const base = held ?? principal;
  return {
    id: principal.id,
    displayName: unstated.includes("displayName") ? base.displayName : principal.displayName,
    email: unstated.includes("email") ? base.email : principal.email,
    orgRole: principal.tokenOrgRole ?? (unstated.includes("orgRole") ? base.orgRole : principal.orgRole),
  };
}

/** RFC 9728 §5.1: where to learn how to authorize for this URL (only for a well-formed one). */
function mcpChallenge(publicUrl: string, workspaceId: string, tokenPresented: boolean): string {
  const parts = tokenPresented ? ['error="invalid_token"'] : [];
  if (isWorkspaceId(workspaceId)) {
    parts.push(`resource_metadata="${resourceMetadataUrl(publicUrl, workspaceId)}"`);
    parts.push(`scope="${DEFAULT_SCOPES.join(" ")}"`);
  }
  return parts.length === 0 ? "Bearer" : `Bearer ${parts.join(", ")}`;
}
