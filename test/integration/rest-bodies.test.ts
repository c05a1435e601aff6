import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { addMember } from "../helpers/members.ts";

// Every REST body is checked by a strict schema, its tool twin's where it has one (ADR 0095): a
// field the route does not read is refused by name with what the body is, and nothing changes.
// The connections routes: connections-rest-bodies.test.ts; tasks: tasks.test.ts; conversations:
// conversations.test.ts.

let instance: TestAtrium;
let ws: string;
const bob = testPrincipal("bob").id;

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
});

afterAll(async () => {
  await instance?.stop();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

const rest = (method: string, path: string, body?: Record<string, unknown>) =>
  instance.rest("alice", method, path.startsWith("/v1/") ? path : `/v1/workspaces/${ws}${path}`, body);

/** The 400's message, which must name `field` and say what the body is. */
async function refusedNaming(response: Response, field: string): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(400);
  const message = (JSON.parse(text) as { error: { message: string } }).error.message;
  expect(message).toContain(`Unrecognized key: "${field}"`);
  expect(message).toMatch(/\nThe body is \{.*\}\.$/);
  return message;
}

async function skill(name: string): Promise<{ status: number; loading?: string; description?: string }> {
  const response = await rest("GET", `/skills/${name}`);
  return { status: response.status, ...((await response.json()) as object) };
}

describe("the skills bodies", () => {
  it("POST /skills with a misspelt `loadng` stores no skill", async () => {
    const body = { name: "sk", description: "d", body: "b", loadng: "always" };
    const message = await refusedNaming(await rest("POST", "/skills", body), "loadng");
    expect(message).toContain('"loading"?');
    expect((await skill("sk")).status).toBe(404);
  });

  it("PATCH /skills/:name with a `name` (no update renames) changes nothing", async () => {
    expect((await rest("POST", "/skills", { name: "keep", description: "d", body: "b" })).status).toBe(201);
    const patch = { intent: "patch_metadata", name: "renamed", description: "d2" };
    const message = await refusedNaming(await rest("PATCH", "/skills/keep", patch), "name");
    expect(message).toContain(
      'The body is {"scope"?, "intent", "body"?, "description"?, "loading"?, "tools"?}.',
    );
    expect(await skill("keep")).toMatchObject({ status: 200, description: "d" });
    expect((await skill("renamed")).status).toBe(404);
  });
});

describe("the notifications body", () => {
  it("POST /notifications/ack with a stray `before` acknowledges nothing", async () => {
    await refusedNaming(
      await rest("POST", "/notifications/ack", { all: true, before: "2026-01-01" }),
      "before",
    );
  });
});

describe("the workspace, members and invitations bodies", () => {
  it("POST /v1/workspaces with a stray field makes no workspace", async () => {
    const before = ((await (await rest("GET", "/v1/workspaces")).json()) as { workspaces: unknown[] })
      .workspaces;
    await refusedNaming(await rest("POST", "/v1/workspaces", { name: "two", members: ["bob"] }), "members");
    const after = ((await (await rest("GET", "/v1/workspaces")).json()) as { workspaces: unknown[] })
      .workspaces;
    expect(after).toHaveLength(before.length);
  });

  it("PATCH /v1/workspaces/:ws with a stray field renames nothing", async () => {
    await refusedNaming(await rest("PATCH", "", { name: "renamed", description: "x" }), "description");
    expect(((await (await rest("GET", "")).json()) as { name: string }).name).not.toBe("renamed");
  });

  it("PATCH …/members/:principal with a stray field changes no role", async () => {
    const response = await rest("PATCH", `/members/${bob}`, { role: "admin", until: "tomorrow" });
    await refusedNaming(response, "until");
    const members = (
      (await (await rest("GET", "/members")).json()) as { members: { principalId: string; role: string }[] }
    ).members;
    expect(members.find((m) => m.principalId === bob)?.role).toBe("member");
  });

  it("POST …/invitations and …/members with a stray field invite nobody", async () => {
    const carol = { email: "carol@example.com", role: "member", message: "welcome" };
    await refusedNaming(await rest("POST", "/invitations", carol), "message");
    await refusedNaming(await rest("POST", "/members", carol), "message");
    const listed = await rest("GET", "/invitations");
    expect(((await listed.json()) as { invitations: unknown[] }).invitations).toEqual([]);
  });

  it("an invitation naming both a principalId and an email is refused, not sent to one of them", async () => {
    const response = await rest("POST", "/invitations", {
      principalId: testPrincipal("dave").id,
      email: "erin@example.com",
    });
    const text = await response.text();
    expect(response.status, text).toBe(400);
    expect((JSON.parse(text) as { error: { message: string } }).error.message).toBe(
      'Name the person to invite with "principalId" or "email", not both.',
    );
    const listed = await rest("GET", "/invitations");
    expect(((await listed.json()) as { invitations: unknown[] }).invitations).toEqual([]);
  });
});

describe("a change only an admin may make", () => {
  // Asked before the body is read: the strict schema ran first, so a member's refusal was a 400
  // describing the admin's body, depending on what they sent. admitted-again.test.ts: asked after.
  it("is 403 for a member whatever the body", async () => {
    const alice = testPrincipal("alice").id;
    const asBob = (method: string, path: string, body: Record<string, unknown> | string) =>
      instance.rest("bob", method, `/v1/workspaces/${ws}${path}`, body, {
        "content-type": "application/json",
      });
    const refused: [string, string, Record<string, unknown> | string][] = [
      ["PATCH", `/members/${alice}`, { role: "owner" }],
      ["PATCH", `/members/${alice}`, "not json"],
      ["PATCH", "", {}],
      ["PATCH", "", { name: "mine", description: "x" }],
      ["POST", "/invitations", { email: "c@example.com", role: "owner" }],
      ["POST", "/members", { email: "c@example.com", message: "hi" }],
      ["POST", "/connections/grants", { principalId: bob, connection: "my_crm", until: "x" }],
      ["POST", "/connections/crm/oauth/start", { scope: "read" }],
      ["POST", "/catalog", "not json"],
      ["POST", "/catalog/com.example~crm/connect", "not json"],
    ];
    for (const [method, path, body] of refused) {
      const response = await asBob(method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body)}: ${await response.text()}`).toBe(
        403,
      );
    }
  });
});

describe("the tool call body", () => {
  it("POST …/tools/call with `args` for `arguments` calls no tool", async () => {
    const body = { name: "skills__create", args: { name: "called", description: "d", body: "b" } };
    await refusedNaming(await rest("POST", "/tools/call", body), "args");
    expect((await skill("called")).status).toBe(404);
  });

  it("POST …/tools/call takes MCP's params as they are, `_meta` included and ignored", async () => {
    const params = {
      name: "skills__create",
      arguments: { name: "with-meta", description: "d", body: "b" },
      _meta: { progressToken: "p1", "io.example/trace": { id: 1 } },
    };
    const response = await rest("POST", "/tools/call", params);
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect((JSON.parse(text) as { isError?: boolean }).isError).toBeUndefined();
    expect((await skill("with-meta")).status).toBe(200);
    const notAnObject = await rest("POST", "/tools/call", { name: "files__list", _meta: "x" });
    expect(notAnObject.status).toBe(400);
    const { error } = (await notAnObject.json()) as { error: { message: string } };
    expect(error.message).toContain('The body is {"name", "arguments"?, "_meta"?}.');
  });
});
