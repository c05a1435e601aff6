import { errors, type JWTHeaderParameters, type JWTPayload, jwtVerify } from "jose";
import { AtriumError, Unauthenticated } from "../../errors.ts";
import type { OidcAuth } from "../../instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS } from "../../kernel/clock.ts";
import { bearerToken } from "../bearer.ts";
import { ACCEPTED_ALGORITHMS, type OidcClient, ProviderKeysUnavailable } from "../oidc-client.ts";
import { derivePrincipalId, type OrgRole, type Principal, type ProfileField } from "../principal.ts";
import type { IdentityProvider } from "../provider.ts";
import { isFirstPartyToken, notAnAccessToken } from "./token-kind.ts";
import { unverifiableToken } from "./unverifiable-token.ts";

const TOKEN_REFUSED = "The bearer token was refused: sign in again to get a fresh one.";

/**
 * `oidc`: any OpenID Connect provider, named by its issuer. A request's bearer token is
 * verified against the issuer's JWKS (found by discovery, cached by jose and refetched on
 * an unknown `kid`), with algorithms pinned and issuer, audience and expiry checked, and
 * must be an access token, never an ID token (token-kind.ts). A request with no credential is anonymous (the caller answers 401); one whose token fails
 * is refused, never downgraded.
 */
export function createOidcProvider(client: OidcClient): IdentityProvider {
  const { auth } = client;
  return {
    name: "oidc",
    async authenticate(request, surface) {
      const header = request.headers.get("authorization");
      if (header === null) return undefined;
      const token = bearerToken(header);
      if (!token) throw new Unauthenticated("The Authorization header must be `Bearer <token>`.");
      // Refused before the keys are fetched, so it is a 401 while the provider is down too.
      if (unverifiableToken(token, auth, Date.now())) throw new Unauthenticated(TOKEN_REFUSED);
      const keys = await client.keySet().catch((error: unknown) => {
        throw providerUnavailable(error as Error);
      });
      let payload: JWTPayload;
      let protectedHeader: JWTHeaderParameters;
      try {
        ({ payload, protectedHeader } = await jwtVerify(token, keys, {
          issuer: auth.issuer,
          audience: auth.audience,
          algorithms: ACCEPTED_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ["exp"],
        }));
      } catch (error) {
        if (error instanceof ProviderKeysUnavailable || error instanceof errors.JWKSTimeout) {
          throw providerUnavailable(error);
        }
        // The reason stays in this process: a caller learns only that the token was refused.
        throw new Unauthenticated(TOKEN_REFUSED);
      }
      const notAccess = notAnAccessToken(protectedHeader, payload, auth);
      if (notAccess !== undefined) throw new Unauthenticated(notAccess);
      if (surface === "mcp" && !isFirstPartyToken(payload, auth)) {
        throw new Unauthenticated(
          "This token was issued by the identity provider to another application; an MCP client " +
            "gets a token for this workspace from Atrium (see the resource_metadata in this challenge).",
        );
      }
      return bearerPrincipal(payload, auth);
    },
  };
}

function providerUnavailable(error: Error): AtriumError {
  return new AtriumError(
    "identity_provider_unavailable",
    503,
    `The identity provider could not be reached to check your token (${error.message}); try again shortly.`,
  );
}

/**
 * The person a bearer token names. Its org role, when it states one, holds for this request
 * only and is never recorded: only a sign-in writes the org role into the directory, so one
 * token's role cannot outlive it (ADR 0071, test/integration/profile-updates.test.ts).
 */
function bearerPrincipal(payload: JWTPayload, auth: OidcAuth): Principal {
  const roleClaim = auth.claims.orgRole;
  // With an organization named, the org role is the person's membership in it, read at sign-in
  // (signin/workos-membership.ts). A WorkOS token's `role` is the role in the token's own
  // `org_id`, which may be another organization: it is not read at all, and the request acts
  // with the role the directory holds (test/integration/workos.test.ts).
  const stated = principalFrom(
    auth.workosOrganization && roleClaim !== undefined ? { ...payload, [roleClaim]: undefined } : payload,
    auth,
  );
  const unstated = stated.unstated ?? [];
  if (unstated.includes("orgRole")) return stated;
  return { ...stated, orgRole: "member", unstated: [...unstated, "orgRole"], tokenOrgRole: stated.orgRole };
}

export function principalFrom(payload: JWTPayload, auth: OidcAuth): Principal {
  const subject = payload[auth.claims.subject];
  if (typeof subject !== "string" || subject.length === 0) {
    throw new Unauthenticated(`The token has no "${auth.claims.subject}" claim to identify you by.`);
  }
  const name = payload[auth.claims.name];
  const hasName = typeof name === "string" && name.length > 0;
  // An address the provider says it did not verify could be anyone's; it names no one here (an
  // invitation by email would open a workspace to it). Absent, the address is kept: several
  // providers (Entra ID among them) never send the claim, and would have no email at all. An
  // operator whose provider lets people set an address it then omits the claim for must not use
  // email invitations with it (docs/configuration.md). Some providers send the claim as a string:
  // "false" was once read as verified, since only boolean false was refused.
  const verified = payload.email_verified;
  const email =
    verified === undefined || verified === true || verified === "true"
      ? payload[auth.claims.email]
      : undefined;
  const unstated: ProfileField[] = [];
  if (!hasName) unstated.push("displayName");
  if (payload[auth.claims.email] === undefined) unstated.push("email");
  if (auth.claims.orgRole !== undefined && payload[auth.claims.orgRole] === undefined)
    unstated.push("orgRole");
  return {
    id: derivePrincipalId(auth.issuer, subject),
    displayName: hasName ? name : subject,
    email: typeof email === "string" ? email : null,
    orgRole: orgRoleFrom(payload, auth),
    ...(unstated.length > 0 ? { unstated } : {}),
  };
}

function orgRoleFrom(payload: JWTPayload, auth: OidcAuth): OrgRole {
  if (!auth.claims.orgRole) return "member";
  const value = payload[auth.claims.orgRole];
  const values = Array.isArray(value) ? value : [value];
  return values.some((v) => typeof v === "string" && auth.claims.orgAdminValues.includes(v))
    ? "admin"
    : "member";
}
