import { readdir } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  MCP_POST_HEADERS,
  startTestAtrium,
  TEST_USER_HEADER,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { addMember } from "../helpers/members.ts";

// A request behind the workspace gate is admitted when its headers come; its body may come minutes
// later, as its sender chooses. It is admitted again once the body has come: a member removed, an
// admin demoted or a person deactivated meanwhile writes nothing with the standing they lost.

let t: TestAtrium;
const mallory = testPrincipal("mallory").id;
const carl = testPrincipal("carl").id;

beforeAll(async () => {
  t = await startTestAtrium();
  await bootstrapWorkspace(t, "orgadmin-olga");
});

afterAll(async () => {
  await t?.stop();
});

/** A request whose body's last bytes go only on `finish()`: it is past the gate meanwhile. */
function slowRequest(
  user: string,
  method: string,
  path: string,
  body: string,
  headers: Record<string, string> = {},
) {
  const bytes = Buffer.from(body);
  let sent!: ReturnType<typeof httpRequest>;
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    sent = httpRequest(
      {
        host: "127.0.0.1",
        port: Number(new URL(t.url).port),
        method,
        path,
        headers: {
          "content-type": "application/json",
          ...headers,
          [TEST_USER_HEADER]: user,
          "content-length": String(bytes.length),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    sent.on("error", reject);
    sent.write(bytes.subarray(0, 2));
  });
  return { answer, finish: () => sent.end(bytes.subarray(2)) };
}

/** Long enough for the server to have read the head and run the gate. */
const pastTheGate = () => new Promise((resolve) => setTimeout(resolve, 200));

async function team(name: string, members: Record<string, "admin" | "member">): Promise<string> {
  const ws = ((await (await t.rest("alice", "POST", "/v1/workspaces", { name })).json()) as { id: string })
    .id;
  for (const [user, role] of Object.entries(members))
    await addMember(t.rest.bind(t), "alice", ws, user, { principalId: testPrincipal(user).id }, role);
  return ws;
}

async function roles(ws: string): Promise<Record<string, string>> {
  const listed = (await (await t.rest("alice", "GET", `/v1/workspaces/${ws}/members`)).json()) as {
    members: Array<{ principalId: string; role: string }>;
  };
  return Object.fromEntries(listed.members.map((m) => [m.principalId, m.role]));
}

describe("a request admitted before its body came is admitted again once it has", () => {
  it("an admin demoted meanwhile cannot promote themselves back", async () => {
    const ws = await team("demoted", { mallory: "admin" });
    const late = slowRequest(
      "mallory",
      "PATCH",
      `/v1/workspaces/${ws}/members/${mallory}`,
      '{"role":"admin"}',
    );
    await pastTheGate();
    expect(
      (await t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${mallory}`, { role: "member" })).status,
    ).toBe(200);
    late.finish();
    expect((await late.answer).status).toBe(403);
    expect((await roles(ws))[mallory]).toBe("member");
  });

  it("an admin removed meanwhile promotes nobody, renames nothing and adds no catalog entry: 404", async () => {
    const ws = await team("removed", { mallory: "admin", carl: "member" });
    const promote = slowRequest(
      "mallory",
      "PATCH",
      `/v1/workspaces/${ws}/members/${carl}`,
      '{"role":"admin"}',
    );
    const rename = slowRequest("mallory", "PATCH", `/v1/workspaces/${ws}`, '{"name":"owned by mallory"}');
    const entry = slowRequest(
      "mallory",
      "POST",
      `/v1/workspaces/${ws}/catalog`,
      JSON.stringify({
        name: "com.example/evil",
        description: "Looks official",
        version: "1.0.0",
        remotes: [{ type: "streamable-http", url: "https://evil.example.com/mcp" }],
      }),
    );
    await pastTheGate();
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${mallory}`)).status).toBe(204);
    for (const late of [promote, rename, entry]) late.finish();
    for (const late of [promote, rename, entry]) expect((await late.answer).status).toBe(404);
    expect((await roles(ws))[carl]).toBe("member");
    const workspace = (await (await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).json()) as {
      name: string;
    };
    expect(workspace.name).toBe("removed");
    const catalog = (await (await t.rest("alice", "GET", `/v1/workspaces/${ws}/catalog`)).json()) as {
      servers: Array<{ name: string }>;
    };
    expect(catalog.servers.map((server) => server.name)).not.toContain("com.example/evil");
  });

  it("a member removed meanwhile stores no upload, and makes no MCP call", async () => {
    const ws = await team("uploads", { carl: "member" });
    const upload = slowRequest("carl", "POST", `/v1/workspaces/${ws}/files?name=late.txt`, "late bytes", {
      "content-type": "text/plain",
    });
    const call = slowRequest(
      "carl",
      "POST",
      `/mcp/${ws}`,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "late-mcp.txt", text: "late" } },
      }),
      { ...MCP_POST_HEADERS },
    );
    await pastTheGate();
    expect((await t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${carl}`)).status).toBe(204);
    upload.finish();
    call.finish();
    expect((await upload.answer).status).toBe(404);
    expect((await call.answer).status).toBe(404);
    const stored = await readdir(join(t.dir, "data", ws, "files", carl)).catch(() => [] as string[]);
    expect(stored.filter((name) => name.startsWith("fl_"))).toEqual([]);
  });

  it("a person deactivated meanwhile changes nothing", async () => {
    const ws = await team("deactivated", { mallory: "admin", carl: "member" });
    const promote = slowRequest(
      "mallory",
      "PATCH",
      `/v1/workspaces/${ws}/members/${carl}`,
      '{"role":"admin"}',
    );
    await pastTheGate();
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${mallory}/deactivate`)).status).toBe(200);
    promote.finish();
    expect((await promote.answer).status).toBe(403);
    expect((await roles(ws))[carl]).toBe("member");
  });

  it("a person deactivated meanwhile creates no workspace, where no workspace gate stands", async () => {
    const dana = testPrincipal("dana").id;
    await bootstrapWorkspace(t, "dana");
    const late = slowRequest("dana", "POST", "/v1/workspaces", '{"name":"made after offboarding"}');
    await pastTheGate();
    expect((await t.rest("orgadmin-olga", "POST", `/v1/users/${dana}/deactivate`)).status).toBe(200);
    late.finish();
    expect((await late.answer).status).toBe(403);
  });
});
