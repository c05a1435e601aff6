import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// A REST query is read by one strict reader, as a body is (src/web/query.ts, ADR 0095): a key the
// route does not take is refused by name, never dropped.
let t: TestAtrium;
let ws: string;
const skill = { name: "release-notes", description: "How we write release notes.", body: "Team text." };

beforeAll(async () => {
  t = await startTestAtrium();
  ws = ((await (await t.rest("alice", "POST", "/v1/workspaces", { name: "W" })).json()) as { id: string }).id;
  expect((await t.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, skill)).status).toBe(201);
  const mine = { ...skill, body: "Mine.", scope: "user" };
  expect((await t.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, mine)).status).toBe(201);
});
afterAll(async () => {
  await t?.stop();
});

async function errorOf(response: Response): Promise<{ status: number; code: string; message: string }> {
  const { error } = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...error };
}

async function workspaceSkillSurvives(): Promise<boolean> {
  const history = await t.rest(
    "alice",
    "GET",
    `/v1/workspaces/${ws}/skills/release-notes/history?scope=workspace`,
  );
  return history.status === 200;
}

describe("a misspelt query parameter on a skill delete", () => {
  for (const query of ["scop=user", "Scope=user"]) {
    it(`?${query} is refused by name and deletes nothing`, async () => {
      const refused = await errorOf(
        await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/release-notes?${query}`),
      );
      expect(refused.status).toBe(400);
      expect(refused.code).toBe("invalid_input");
      expect(refused.message).toContain(`"${query.split("=")[0]}"`);
      expect(refused.message).toContain('"scope"');
      expect(await workspaceSkillSurvives()).toBe(true);
    });
  }

  it("a scope given twice is refused, and deletes nothing", async () => {
    const refused = await errorOf(
      await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/skills/release-notes?scope=user&scope=workspace`),
    );
    expect(refused.status).toBe(400);
    expect(refused.message).toContain('"scope" more than once');
    expect(await workspaceSkillSurvives()).toBe(true);
  });
});

it("a listing refuses a key it does not take, and says which it takes", async () => {
  const refused = await errorOf(await t.rest("alice", "GET", `/v1/workspaces/${ws}/files?limt=5`));
  expect(refused.status).toBe(400);
  expect(refused.message).toContain('"limt"');
  expect(refused.message).toContain('"limit", "cursor"');
  expect((await t.rest("alice", "GET", `/v1/workspaces/${ws}/files?limit=5`)).status).toBe(200);
});

it("a change on a route that takes no query refuses one, and changes nothing", async () => {
  const upload = await t.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=a.txt`, "hello");
  expect(upload.status).toBe(201);
  const { id } = (await upload.json()) as { id: string };
  const refused = await errorOf(await t.rest("alice", "DELETE", `/v1/files/${id}?force=true`));
  expect(refused.status).toBe(400);
  expect(refused.message).toContain("takes no query parameters");
  expect((await t.rest("alice", "GET", `/v1/files/${id}/meta`)).status).toBe(200);
});

it("a read on a route that takes no query ignores one, so cache-busting still reads", async () => {
  expect((await t.rest("alice", "GET", `/v1/workspaces/${ws}/skills?_=1700000000`)).status).toBe(200);
});

it("a query on a path no route answers is still 404", async () => {
  expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/nothing-here?x=1`)).status).toBe(404);
});
