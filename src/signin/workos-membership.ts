import type { JWTPayload } from "jose";
import { SignInFailed } from "../identity/oidc-client.ts";
import type { OidcAuth } from "../instance/schema.ts";

const API_TIMEOUT_MS = 5_000;

interface MembershipList {
  data?: Array<{ status?: unknown; role?: { slug?: unknown }; roles?: Array<{ slug?: unknown }> }>;
}

/**
 * With `workos` and `auth.organizationId`, the person's org role is their membership role
 * in that organization, read from WorkOS's organization-memberships API with the API key:
 * WorkOS puts no role in the ID or OAuth access tokens AuthKit issues for sign-in. The
 * answer replaces the configured role claim; a person with no active membership has none.
 * An unreachable API fails the sign-in rather than signing an admin in as a member.
 */
export async function withWorkosMembershipRole(claims: JWTPayload, auth: OidcAuth): Promise<JWTPayload> {
  const organization = auth.workosOrganization;
  const roleClaim = auth.claims.orgRole;
  if (!organization || !roleClaim || typeof claims.sub !== "string" || !auth.clientSecret) return claims;
  const url = new URL(`${organization.apiUrl}/user_management/organization_memberships`);
  url.searchParams.set("user_id", claims.sub);
  url.searchParams.set("organization_id", organization.organizationId);
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { authorization: `Bearer ${auth.clientSecret}`, accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(API_TIMEOUT_MS),
    });
  } catch (error) {
    throw new SignInFailed(
      "provider_unavailable",
      `The WorkOS API could not be reached for the organization role (${(error as Error).message}).`,
    );
  }
  if (!response.ok) {
    throw new SignInFailed(
      "provider_unavailable",
      `The WorkOS API answered ${response.status} when asked for the organization role.`,
    );
  }
  const list = (await response.json().catch(() => ({}))) as MembershipList;
  const slugs = new Set<string>();
  for (const membership of list.data ?? []) {
    if (membership.status !== "active") continue;
    for (const role of [membership.role, ...(membership.roles ?? [])]) {
      if (typeof role?.slug === "string") slugs.add(role.slug);
    }
  }
  return { ...claims, [roleClaim]: [...slugs] };
}
