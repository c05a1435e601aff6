import { describe, expect, it } from "vitest";
import { deriveCookieKey } from "../../../src/identity/session-cookie.ts";
import {
  LOGIN_STATE_TTL_SECONDS,
  type LoginState,
  LoginStateCookie,
  localReturnTo,
  MAX_RETURN_TO_CHARS,
} from "../../../src/signin/login-state.ts";

const KEY = deriveCookieKey("a-session-secret-of-at-least-32-bytes!!", "login-state");
const STATE: LoginState = {
  state: "st",
  nonce: "no",
  codeVerifier: "a-verifier-that-only-atrium-may-read",
  returnTo: "/oauth/authorize?x=1",
};

function callbackRequest(setCookie: string): Request {
  return new Request("http://127.0.0.1/auth/callback", {
    headers: { cookie: setCookie.split(";")[0] as string },
  });
}

describe("the login-state cookie", () => {
  it("is HttpOnly, SameSite=Lax, host-only, for ten minutes", async () => {
    const cookie = await new LoginStateCookie(KEY, false).seal(STATE);
    expect(cookie).toMatch(
      new RegExp(`^atrium_login=[^;]+; Max-Age=${LOGIN_STATE_TTL_SECONDS}; Path=/; HttpOnly; SameSite=Lax$`),
    );
  });

  it("over https is __Host-, so no sibling subdomain can set it (login CSRF by cookie tossing)", async () => {
    const secure = await new LoginStateCookie(KEY, true).seal(STATE);
    expect(secure).toMatch(
      /^__Host-atrium_login=[^;]+; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
    );
    expect(secure).not.toMatch(/Domain=/i);
  });

  it("gives back what was sealed, and the browser cannot read it", async () => {
    const cookies = new LoginStateCookie(KEY, false);
    const cookie = await cookies.seal(STATE);
    expect(await cookies.open(callbackRequest(cookie))).toEqual(STATE);
    const value = (cookie.split(";")[0] as string).slice("atrium_login=".length);
    const decoded = value
      .split(".")
      .map((part) => Buffer.from(part, "base64url").toString("latin1"))
      .join("|");
    expect(decoded).toContain('"enc":"A256GCM"');
    expect(decoded).not.toContain(STATE.codeVerifier);
    expect(decoded).not.toContain("/oauth/authorize");
  });

  it("is refused when tampered with, sealed with another key, or older than ten minutes", async () => {
    let nowMs = Date.now();
    const cookies = new LoginStateCookie(KEY, false, () => nowMs);
    const cookie = await cookies.seal(STATE);
    const value = (cookie.split(";")[0] as string).slice("atrium_login=".length);
    const parts = value.split(".");
    parts[3] = `${parts[3]?.[0] === "A" ? "B" : "A"}${parts[3]?.slice(1)}`;
    expect(await cookies.open(callbackRequest(`atrium_login=${parts.join(".")}`))).toBeUndefined();
    const other = new LoginStateCookie(
      deriveCookieKey("another-secret-long-enough-for-this-test", "login-state"),
      false,
    );
    expect(await other.open(callbackRequest(cookie))).toBeUndefined();
    nowMs += (LOGIN_STATE_TTL_SECONDS + 1) * 1000;
    expect(await cookies.open(callbackRequest(cookie))).toBeUndefined();
  });

  it("is cleared with Max-Age=0 on the same path", () => {
    expect(new LoginStateCookie(KEY, false).clear()).toBe(
      "atrium_login=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax",
    );
  });
});

describe("localReturnTo", () => {
  it("keeps a local path with its query", () => {
    expect(localReturnTo("/")).toBe("/");
    expect(localReturnTo("/v1/bootstrap")).toBe("/v1/bootstrap");
    expect(localReturnTo("/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fx")).toBe(
      "/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fx",
    );
  });

  it("turns anything that could leave this origin into /", () => {
    for (const attempt of [
      undefined,
      "",
      "//evil.example",
      "///evil.example",
      "/\\evil.example",
      "/\\/evil.example",
      "\\\\evil.example",
      "https://evil.example",
      "javascript:alert(1)",
      "evil.example",
      "/\t/evil.example",
      "/\n/evil.example",
      "/ok/../\\evil",
      "/caf\u00e9",
      `/${"a".repeat(MAX_RETURN_TO_CHARS)}`,
    ]) {
      expect(localReturnTo(attempt), JSON.stringify(attempt)).toBe("/");
    }
  });
});
