import { describe, expect, it } from "vitest";
import { startTestAtrium } from "../helpers/atrium.ts";

// workspaces.maxAdministeredPerPerson (ADR 0141): the instance's setting is the bound a create
// over REST meets; a first workspace at bootstrap is made whatever it is.

describe("workspaces.maxAdministeredPerPerson", () => {
  it("refuses a create over REST past the configured limit with 409 too_many_workspaces, naming it", async ({
    onTestFinished,
  }) => {
    const t = await startTestAtrium({ sections: { workspaces: { maxAdministeredPerPerson: 1 } } });
    onTestFinished(() => t.stop());
    expect((await t.rest("alice", "GET", "/v1/bootstrap")).status).toBe(200);
    const refused = await t.rest("alice", "POST", "/v1/workspaces", { name: "second" });
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("too_many_workspaces");
    expect(body.error.message).toContain("fewer than 1 (workspaces.maxAdministeredPerPerson)");
    expect((await t.rest("bob", "POST", "/v1/workspaces", { name: "bob's" })).status).toBe(201);
  });
});
