import { createHash } from "node:crypto";

export type OrgRole = "admin" | "member";

/** Who made a request, as the identity provider vouches for it. */
export interface Principal {
  /** Stable, opaque, path-safe: `usr_` + 24 hex, derived from (issuer, subject). */
  id: string;
  displayName: string;
  email: string | null;
  orgRole: OrgRole;
  /**
   * The parts the credential did not state, whose values above are fallbacks (the subject
   * for a missing name, no email, `member`). A stored profile is never changed from them:
   * one token without an email claim must not blank the address the person signed in with.
   */
  unstated?: readonly ProfileField[];
  /**
   * The org role a provider's bearer token carries. It holds for that token's own request and
   * is never recorded (ADR 0071): `orgRole` is then the fallback and `unstated` names it.
   */
  tokenOrgRole?: OrgRole;
}

/** The parts of a person a credential may or may not state. */
export type ProfileField = "displayName" | "email" | "orgRole";

/** The principal as a request or a session carries it: what the credential stated is not its business. */
export function withoutUnstated(principal: Principal): Principal {
  const { unstated: _unstated, tokenOrgRole: _tokenOrgRole, ...person } = principal;
  return person;
}

/**
 * The id is a digest of the issuer and the subject, so no subject string (`../`, `/`, NUL,
 * unicode, 10 kB) can reach a path, and two issuers' equal subjects never collide.
 */
export function derivePrincipalId(issuer: string, subject: string): string {
  // JSON encoding keeps the pair unambiguous whatever either string contains.
  const digest = createHash("sha256")
    .update(JSON.stringify([issuer, subject]))
    .digest("hex");
  return `usr_${digest.slice(0, 24)}`;
}
