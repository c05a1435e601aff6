import { describe, expect, it } from "vitest";
import { Unauthenticated } from "../../../src/errors.ts";
import { derivePrincipalId } from "../../../src/identity/principal.ts";
import { createDevProvider, DEV_ISSUER, DEV_PRINCIPAL } from "../../../src/identity/providers/dev.ts";

const URL_ = "http://127.0.0.1:8787/v1/bootstrap";

describe("dev identity provider", () => {
  it("is named dev", () => {
    expect(createDevProvider().name).toBe("dev");
  });

  it("a request without credentials is the local developer, an org admin", async () => {
    const principal = await createDevProvider().authenticate(new Request(URL_), "rest");
    expect(principal).toBe(DEV_PRINCIPAL);
    expect(principal).toEqual({
      id: derivePrincipalId(DEV_ISSUER, "developer"),
      displayName: "Local Developer",
      email: "developer@localhost",
      orgRole: "admin",
    });
  });

  it("the developer cannot be changed by a caller", () => {
    expect(Object.isFrozen(DEV_PRINCIPAL)).toBe(true);
  });

  for (const [label, value] of [
    ["a bearer token", "Bearer abc.def.ghi"],
    ["basic credentials", "Basic ZGV2OmRldg=="],
    ["an empty Authorization header", ""],
  ] as const) {
    it(`a request with ${label} is refused with Unauthenticated, not treated as the developer`, async () => {
      const request = new Request(URL_, { headers: { Authorization: value } });
      const outcome = createDevProvider().authenticate(request, "rest");
      await expect(outcome).rejects.toBeInstanceOf(Unauthenticated);
      await expect(outcome).rejects.toMatchObject({ code: "unauthenticated", status: 401 });
      await expect(outcome).rejects.toThrow(/accepts no credentials/);
    });
  }

  it("refuses the header whatever its case", async () => {
    const request = new Request(URL_, { headers: { AUTHORIZATION: "Bearer x" } });
    await expect(createDevProvider().authenticate(request, "rest")).rejects.toBeInstanceOf(Unauthenticated);
  });
});
