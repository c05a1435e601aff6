import { describe, expect, it } from "vitest";
import { checkClientMetadata } from "../../../src/oauth/client-rules.ts";
import {
  describeRedirectUri,
  redirectUriMatches,
  validateRedirectUri,
} from "../../../src/oauth/redirect-uris.ts";

describe("validateRedirectUri", () => {
  it.each([
    "https://app.example.com/callback",
    "https://app.example.com/cb?x=1",
    "http://127.0.0.1:8080/callback",
    "http://[::1]/callback",
    "http://localhost:3000/callback",
    "com.example.app:/oauth2redirect",
    "com.example.app://callback",
  ])("accepts %s", (uri) => {
    expect(validateRedirectUri(uri)).toBeUndefined();
  });

  it.each([
    ["http://app.example.com/callback", /loopback/],
    ["http://10.0.0.1/callback", /loopback/],
    ["https://app.example.com/cb#frag", /fragment/],
    ["javascript:alert(1)", /javascript:/],
    ["data:text/html,hi", /data:/],
    ["file:///etc/passwd", /file:/],
    ["myapp://callback", /reversed domain name/],
    ["https://user:pw@app.example.com/cb", /user name/],
    ["/relative/path", /absolute URL/],
    [`https://example.com/${"a".repeat(2100)}`, /longer/],
  ])("refuses %s", (uri, why) => {
    expect(validateRedirectUri(uri)).toMatch(why);
  });
});

describe("redirectUriMatches", () => {
  it("matches an exact registered URI", () => {
    expect(redirectUriMatches(["https://a.example/cb"], "https://a.example/cb")).toBe(true);
  });

  it("lets the port differ on a loopback IP literal (RFC 8252 §7.3)", () => {
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "http://127.0.0.1:51234/cb")).toBe(true);
    expect(redirectUriMatches(["http://127.0.0.1:3000/cb"], "http://127.0.0.1:51234/cb")).toBe(true);
    expect(redirectUriMatches(["http://[::1]:3000/cb"], "http://[::1]:4000/cb")).toBe(true);
  });

  it("keeps path, query, scheme and host exact on loopback", () => {
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "http://127.0.0.1:5000/other")).toBe(false);
    expect(redirectUriMatches(["http://127.0.0.1/cb?a=1"], "http://127.0.0.1:5000/cb?a=2")).toBe(false);
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "http://127.0.0.1:5000/cb?a=1")).toBe(false);
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "http://[::1]:5000/cb")).toBe(false);
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "https://127.0.0.1:5000/cb")).toBe(false);
    expect(redirectUriMatches(["http://127.0.0.1/cb"], "http://127.0.0.1:5000/x/../cb")).toBe(false);
  });

  it("does not let the port differ for localhost or any non-loopback host", () => {
    expect(redirectUriMatches(["http://localhost:3000/cb"], "http://localhost:4000/cb")).toBe(false);
    expect(redirectUriMatches(["https://a.example/cb"], "https://a.example:8443/cb")).toBe(false);
  });

  it("refuses anything that differs at all from a non-loopback URI", () => {
    expect(redirectUriMatches(["https://a.example/cb"], "https://a.example/cb/")).toBe(false);
    expect(redirectUriMatches(["https://a.example/cb"], "https://A.example/cb")).toBe(false);
    expect(redirectUriMatches(["com.example.app:/cb"], "com.example.app:/cb2")).toBe(false);
    expect(redirectUriMatches([], "https://a.example/cb")).toBe(false);
  });
});

describe("registered redirect URIs are stored in canonical form", () => {
  it("lower-cases scheme and host, drops the default port and resolves dot segments", () => {
    const checked = checkClientMetadata({
      redirect_uris: ["HTTPS://Example.COM:443/cb", "https://example.com/a/../cb", "http://127.0.0.1:80/x"],
    });
    expect(checked.redirect_uris).toEqual(["https://example.com/cb", "http://127.0.0.1/x"]);
  });

  it("matches exactly on the canonical form: the stored URI, not a differently spelled one", () => {
    const registered = checkClientMetadata({ redirect_uris: ["HTTPS://Example.COM:443/cb"] }).redirect_uris;
    expect(redirectUriMatches(registered, "https://example.com/cb")).toBe(true);
    for (const other of [
      "HTTPS://Example.COM:443/cb",
      "https://example.com/cb/",
      "https://example.com:8443/cb",
    ]) {
      expect(redirectUriMatches(registered, other), other).toBe(false);
    }
  });
});

describe("describeRedirectUri: where the consent page says the browser goes", () => {
  it.each([
    ["https://app.example.com:8443/callback", "app.example.com:8443"],
    ["http://127.0.0.1:3999/callback", "127.0.0.1:3999, an application on this computer"],
    [
      "com.example.app:/oauth2redirect",
      "the app that opens com.example.app: links (com.example.app:/oauth2redirect)",
    ],
  ])("%s is shown as %s", (uri, shown) => {
    expect(describeRedirectUri(uri)).toBe(shown);
  });

  it("a private-use scheme with an authority is named by its scheme, never by a host that looks like a website", () => {
    const shown = describeRedirectUri("com.evil.app://claude.ai/callback");
    expect(shown).toMatch(/^the app that opens com\.evil\.app: links/);
    expect(shown).not.toBe("claude.ai");
  });
});
