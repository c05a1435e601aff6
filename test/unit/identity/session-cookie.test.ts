import { describe, expect, it } from "vitest";
import {
  deriveCookieKey,
  readCookie,
  setCookie,
  signValue,
  verifySignedValue,
} from "../../../src/identity/session-cookie.ts";

const SECRET = "a-session-secret-of-at-least-32-bytes!!";

describe("cookie signing", () => {
  it("a signed value verifies with its key and with no other", () => {
    const sessionKey = deriveCookieKey(SECRET, "session");
    const signed = signValue(sessionKey, "abc");
    expect(verifySignedValue(sessionKey, signed)).toBe("abc");
    expect(verifySignedValue(deriveCookieKey(SECRET, "login-state"), signed)).toBeUndefined();
    expect(verifySignedValue(deriveCookieKey(`${SECRET}x`, "session"), signed)).toBeUndefined();
  });

  it("a changed value or signature does not verify", () => {
    const key = deriveCookieKey(SECRET, "session");
    const signed = signValue(key, "abc");
    const signature = signed.slice(4);
    expect(verifySignedValue(key, `abd.${signature}`)).toBeUndefined();
    expect(verifySignedValue(key, `abc.${signature.slice(0, -2)}`)).toBeUndefined();
    expect(verifySignedValue(key, "abc.")).toBeUndefined();
    expect(verifySignedValue(key, `.${signature}`)).toBeUndefined();
    expect(verifySignedValue(key, "abc")).toBeUndefined();
  });
});

describe("setCookie and readCookie", () => {
  it("writes HttpOnly, SameSite=Lax, the path and Max-Age, and Secure only when asked", () => {
    expect(setCookie("a", "v", { path: "/auth/callback", maxAgeSeconds: 600, secure: false })).toBe(
      "a=v; Max-Age=600; Path=/auth/callback; HttpOnly; SameSite=Lax",
    );
    expect(setCookie("__Host-a", "v", { path: "/", maxAgeSeconds: 0, secure: true })).toBe(
      "__Host-a=v; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax",
    );
  });

  it("refuses a __Host- cookie that is not Secure on Path=/", () => {
    expect(() => setCookie("__Host-a", "v", { path: "/", maxAgeSeconds: 1, secure: false })).toThrow();
    expect(() => setCookie("__Host-a", "v", { path: "/auth", maxAgeSeconds: 1, secure: true })).toThrow();
  });

  it("reads the named cookie among others, and nothing when it is absent", () => {
    const request = new Request("http://127.0.0.1/", { headers: { cookie: "x=1; atrium_session=a.b; y=2" } });
    expect(readCookie(request, "atrium_session")).toBe("a.b");
    expect(readCookie(request, "missing")).toBeUndefined();
    expect(readCookie(new Request("http://127.0.0.1/"), "atrium_session")).toBeUndefined();
  });
});
