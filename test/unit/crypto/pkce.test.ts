import { describe, expect, it } from "vitest";
import { s256, verifyPkce } from "../../../src/crypto/pkce.ts";

// RFC 7636 Appendix B.
const VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

describe("PKCE", () => {
  it("computes the RFC 7636 example challenge", () => {
    expect(s256(VERIFIER)).toBe(CHALLENGE);
  });

  it("accepts the verifier of a challenge and refuses any other", () => {
    expect(verifyPkce(VERIFIER, CHALLENGE)).toBe(true);
    expect(verifyPkce(`${VERIFIER.slice(0, -1)}Y`, CHALLENGE)).toBe(false);
  });

  it("refuses plain PKCE: the challenge itself is not a verifier for it", () => {
    expect(verifyPkce(CHALLENGE, CHALLENGE)).toBe(false);
  });

  it("refuses verifiers outside the RFC 7636 grammar even when their digest matches", () => {
    const short = "a".repeat(42);
    expect(verifyPkce(short, s256(short))).toBe(false);
    const long = "a".repeat(129);
    expect(verifyPkce(long, s256(long))).toBe(false);
    const badChars = `${"a".repeat(42)}+`;
    expect(verifyPkce(badChars, s256(badChars))).toBe(false);
    const longest = "~".repeat(128);
    expect(verifyPkce(longest, s256(longest))).toBe(true);
  });
});
