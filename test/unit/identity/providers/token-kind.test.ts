import { describe, expect, it } from "vitest";
import { notAnAccessToken } from "../../../../src/identity/providers/token-kind.ts";
import type { OidcAuth } from "../../../../src/instance/schema.ts";

const auth: OidcAuth = {
  adapter: "oidc",
  issuer: "https://id.example",
  clientId: "atrium",
  clientSecret: undefined,
  clientAuthMethod: "none",
  scopes: ["openid"],
  audience: "atrium",
  claims: { subject: "sub", name: "name", email: "email", orgAdminValues: [] },
  firstPartyClients: ["cli-app"],
};
const ES256 = { alg: "ES256" };

describe("notAnAccessToken", () => {
  it("takes an RFC 9068 at+jwt whatever else it carries", () => {
    for (const typ of ["at+jwt", "AT+JWT", "application/at+jwt"]) {
      expect(notAnAccessToken({ ...ES256, typ }, { aud: "atrium", nonce: "n" }, auth), typ).toBeUndefined();
    }
  });

  it("refuses a token explicitly typed as something else (logout, event, ID tokens)", () => {
    for (const typ of ["logout+jwt", "secevent+jwt", "id_token+jwt"]) {
      expect(notAnAccessToken({ ...ES256, typ }, { aud: "https://api.example" }, auth), typ).toMatch(typ);
    }
  });

  it("refuses an untyped or JWT-typed token carrying a nonce, whatever its audience", () => {
    for (const header of [ES256, { ...ES256, typ: "JWT" }]) {
      expect(notAnAccessToken(header, { aud: "https://api.example", nonce: "n" }, auth)).toMatch(/ID token/);
    }
  });

  it("refuses a token whose only audience is the client id, even with azp naming Atrium itself", () => {
    expect(notAnAccessToken(ES256, { aud: "atrium" }, auth)).toMatch(/ID token/);
    expect(notAnAccessToken(ES256, { aud: ["atrium"], azp: "atrium" }, auth)).toMatch(/ID token/);
  });

  it("takes a client-id-audience token whose azp or client_id names a first-party client", () => {
    expect(notAnAccessToken(ES256, { aud: "atrium", azp: "cli-app" }, auth)).toBeUndefined();
    expect(
      notAnAccessToken({ ...ES256, typ: "JWT" }, { aud: "atrium", client_id: "cli-app" }, auth),
    ).toBeUndefined();
  });

  it("takes a plain JWT addressed to an API audience", () => {
    expect(notAnAccessToken({ ...ES256, typ: "JWT" }, { aud: "https://api.example" }, auth)).toBeUndefined();
    expect(notAnAccessToken(ES256, { aud: ["atrium", "https://api.example"] }, auth)).toBeUndefined();
  });
});
