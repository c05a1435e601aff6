import { describe, expect, it } from "vitest";
import { originCheck } from "../../../../src/http/middleware/origin-guard.ts";

// The Host check compares authorities as HTTP does (RFC 9110 §4.2.3): case-insensitive names and
// the scheme's default port normalised; anything that is not `uri-host [":" port]` is refused.
const check = originCheck(
  () => "https://atrium.example.com",
  () => false,
);
const codeFor = (host: string) => check(host, undefined, "/v1/bootstrap")?.error.code;

describe("the Host check", () => {
  it.each([
    "atrium.example.com",
    "Atrium.Example.COM",
    "atrium.example.com:443",
    "atrium.example.com:",
    "localhost:3000",
    "LOCALHOST",
    "127.0.0.1",
    "[::1]:8080",
  ])("accepts %s", (host) => {
    expect(codeFor(host)).toBeUndefined();
  });

  it.each([
    "other.example.com",
    "atrium.example.com:8443",
    "atrium.example.com:80",
    "atrium.example.com.",
    "evil.example@atrium.example.com",
    "atrium.example.com@evil.example",
    "evil.example@localhost",
    "localhost/evil",
    "localhost?x",
    "localhost#x",
    "localhost\\evil",
    "atrium.example.com:443@evil.example",
    "atrium example.com",
    "",
  ])("refuses %j", (host) => {
    expect(codeFor(host)).toBe("forbidden_host");
  });

  it("compares an http public URL's default port as 80", () => {
    const plain = originCheck(
      () => "http://atrium.example.com",
      () => false,
    );
    expect(plain("Atrium.example.com:80", undefined, "/")).toBeUndefined();
    expect(plain("atrium.example.com:443", undefined, "/")?.error.code).toBe("forbidden_host");
  });
});
