import { describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../../src/identity/principal.ts";
import { isPrincipalId } from "../../../src/ids.ts";

const PRINCIPAL_ID = /^usr_[0-9a-f]{24}$/;

describe("derivePrincipalId", () => {
  it("is stable for one (issuer, subject)", () => {
    const a = derivePrincipalId("https://issuer.example.com", "alice");
    expect(derivePrincipalId("https://issuer.example.com", "alice")).toBe(a);
    expect(a).toMatch(PRINCIPAL_ID);
    expect(isPrincipalId(a)).toBe(true);
  });

  it("is usr_ + 24 hex for any subject, however hostile", () => {
    const hostile = [
      "",
      "../",
      "../../etc/passwd",
      "/",
      "a/b",
      "\0",
      "alice\0admin",
      "C:\\Windows",
      "ws_0123456789abcdef",
      "usr_0123456789abcdef01234567",
      "é".repeat(5_000), // 10 kB of UTF-8
      "🙂".repeat(2_500),
      "\u202e\u0000\uffff",
    ];
    const ids = hostile.map((subject) => derivePrincipalId("https://issuer.example.com", subject));
    for (const id of ids) expect(id).toMatch(PRINCIPAL_ID);
    expect(new Set(ids).size).toBe(hostile.length);
  });

  it("different issuers never collide on the same subject", () => {
    const issuers = [
      "https://a.example.com",
      "https://b.example.com",
      "atrium:dev",
      "",
      "https://a.example.com/",
    ];
    for (const subject of ["alice", "", "1", "../"]) {
      const ids = issuers.map((issuer) => derivePrincipalId(issuer, subject));
      expect(new Set(ids).size).toBe(issuers.length);
    }
  });

  it("the issuer/subject boundary is not shifted by moving characters across it", () => {
    expect(derivePrincipalId("https://a.example.com", "bob")).not.toBe(
      derivePrincipalId("https://a.example.comb", "ob"),
    );
    expect(derivePrincipalId("ab", "c")).not.toBe(derivePrincipalId("a", "bc"));
  });
});

describe("isPrincipalId", () => {
  it("accepts only usr_ + 24 lowercase hex", () => {
    expect(isPrincipalId("usr_0123456789abcdef01234567")).toBe(true);
    for (const value of [
      "usr_0123456789ABCDEF01234567",
      "usr_0123456789abcdef0123456",
      "usr_0123456789abcdef012345678",
      "ws_0123456789abcdef01234567",
      "usr_0123456789abcdef01234567\n",
      "../usr_0123456789abcdef01234567",
    ]) {
      expect(isPrincipalId(value)).toBe(false);
    }
  });
});
