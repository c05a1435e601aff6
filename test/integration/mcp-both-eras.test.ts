import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { modernMcpRequest } from "../helpers/mcp-request.ts";

// Both eras over real HTTP on one workspace URL, with the SDK's v2 client pinned to each.
const ERAS = ["2025-11-25", "2026-07-28"] as const;
type Era = (typeof ERAS)[number];

let instance: TestAtrium;
let ws: string;

function connect(era: Era): Promise<Client> {
  return instance.mcpClient("alice", ws, { era });
}

async function writeWorkspaceSkill(name: string, text: string): Promise<void> {
  const dir = join(instance.root, ws, "skills", name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "SKILL.md"), text);
}

const SKILL =
  "---\nname: careful-deletes\ndescription: Confirm before deleting.\n---\nAsk the person before you delete anything.\n";

beforeAll(async () => {
  instance = await startTestAtrium();
  ws = await bootstrapWorkspace(instance, "alice");
  await writeWorkspaceSkill("careful-deletes", SKILL);
});

afterAll(async () => {
  await instance?.stop();
});

describe.each(ERAS)("era %s", (era) => {
  it("is the era the client speaks, with this caller's skills as instructions", async () => {
    const client = await connect(era);
    expect(client.getNegotiatedProtocolVersion()).toBe(era);
    expect(client.getInstructions()).toContain("careful-deletes");
  });

  it("lists and calls the workspace's tools", async () => {
    const client = await connect(era);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["files__write", "files__info"]));
    const written = await client.callTool({
      name: "files__write",
      arguments: { name: `${era}.txt`, text: era },
    });
    expect(written.isError).toBeFalsy();
    const { id } = written.structuredContent as { id: string };
    const info = await client.callTool({ name: "files__info", arguments: { id } });
    expect(info.structuredContent).toMatchObject({ id, name: `${era}.txt`, size: era.length });
  });

  it("serves skills through the Skills Extension and as skill:// resources", async () => {
    const client = await connect(era);
    const skills = new SkillsClient(client);
    const listing = await skills.list();
    const entry = listing.skills.find((skill) => skill.frontmatter.name === "careful-deletes");
    expect(entry?.uri).toBe("skill://workspace/careful-deletes/SKILL.md");
    const { skill } = await skills.get("skill://workspace/careful-deletes/SKILL.md");
    expect(skill).toEqual(entry);
    await expect(skills.get("skill://workspace/nope/SKILL.md")).rejects.toThrow(/No skill is served/);
    const read = await client.readResource({ uri: "skill://workspace/careful-deletes" });
    expect(read.contents[0]).toMatchObject({ text: "Ask the person before you delete anything." });
  });

  it("a tools/call that asks for progress gets each report, then the result", async () => {
    const client = await connect(era);
    const reports: Array<{ progress: number; total?: number }> = [];
    const text = "x".repeat(2 * 1024 * 1024 + 1);
    const result = await client.callTool(
      { name: "files__write", arguments: { name: `big-${era}.txt`, text } },
      { onprogress: (report) => reports.push(report) },
    );
    expect(result.isError).toBeFalsy();
    expect(reports.map((r) => [r.progress, r.total])).toEqual([
      [1024 * 1024, text.length],
      [2 * 1024 * 1024, text.length],
      [text.length, text.length],
    ]);
  });

  it("completes the skill resource template's path from the caller's skills", async () => {
    const client = await connect(era);
    const { completion } = await client.complete({
      ref: { type: "ref/resource", uri: "skill://{+path}" },
      argument: { name: "path", value: "workspace/care" },
    });
    expect(completion.values).toEqual(["workspace/careful-deletes"]);
    const none = await client.complete({
      ref: { type: "ref/prompt", name: "anything" },
      argument: { name: "x", value: "" },
    });
    expect(none.completion.values).toEqual([]);
  });
});

/** A 2026-07-28 request (test/helpers/mcp-request.ts), with `headers` laid over its own. */
function modernRequest(
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const request = modernMcpRequest({ jsonrpc: "2.0", id: 9, method, params });
  return { headers: { ...request.headers, ...headers }, body: JSON.stringify(request.body) };
}

const LEGACY_CALL = {
  headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
};

// biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers are read field by field in assertions.
type Answer = Record<string, any>;

async function post(
  user: string | null,
  request: { headers: Record<string, string>; body: string },
  path = `/mcp/${ws}`,
) {
  const response = await instance.raw(user, "POST", path, request);
  return { status: response.status, json: JSON.parse(response.text || "null") as Answer };
}

describe("the 2026-07-28 edge", () => {
  it("the streamed answer is an SSE stream: progress first, the result last, in both eras", async () => {
    const params = {
      name: "files__write",
      arguments: { name: "streamed.txt", text: "hello" },
      _meta: { progressToken: "p1" },
    };
    const modern = modernMcpRequest({ jsonrpc: "2.0", id: 9, method: "tools/call", params });
    const legacy = {
      headers: { ...LEGACY_CALL.headers },
      body: { jsonrpc: "2.0", id: 9, method: "tools/call", params },
    };
    for (const request of [modern, legacy]) {
      const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
        headers: request.headers,
        body: JSON.stringify(request.body),
      });
      expect(response.headers["content-type"]).toMatch(/^text\/event-stream/);
      const messages = response.text
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)));
      expect(messages.map((m) => m.method ?? "result")).toEqual(["notifications/progress", "result"]);
      expect(messages[0].params).toMatchObject({ progressToken: "p1", progress: 5, total: 5 });
      expect(messages[1]).toMatchObject({ id: 9, result: { structuredContent: { name: "streamed.txt" } } });
    }
  });

  it("an error a tool's handler answers with is a 200 carrying the JSON-RPC error", async () => {
    const { status, json } = await post("alice", modernRequest("prompts/get", { name: "missing" }));
    expect(json.error).toMatchObject({ code: -32602, message: 'Unknown prompt "missing".' });
    expect(status).toBe(200);
  });

  it("without a progress token the same call is plain JSON", async () => {
    const response = await instance.raw("alice", "POST", `/mcp/${ws}`, {
      ...modernRequest("tools/call", { name: "files__write", arguments: { name: "plain.txt", text: "hi" } }),
    });
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("a stranger gets the same 404 in both eras as for a workspace that does not exist", async () => {
    const answers = await Promise.all([
      post("mallory", LEGACY_CALL),
      post("mallory", modernRequest("tools/list")),
      post("mallory", modernRequest("tools/list"), "/mcp/ws_0000000000000000"),
      post("mallory", LEGACY_CALL, "/mcp/ws_0000000000000000"),
    ]);
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]?.status).toBe(404);
  });

  it("server/discover gives this caller's instructions with private cache hints", async () => {
    const { status, json } = await post("alice", modernRequest("server/discover"));
    expect(status).toBe(200);
    expect(json.result.supportedVersions).toEqual(["2026-07-28"]);
    expect(json.result.instructions).toContain("careful-deletes");
    expect(json.result).toMatchObject({ ttlMs: 30_000, cacheScope: "private" });
    const bob = await post(
      "bob",
      modernRequest("server/discover"),
      `/mcp/${await bootstrapWorkspace(instance, "bob")}`,
    );
    expect(bob.json.result.instructions ?? "").not.toContain("careful-deletes");
  });

  it("an Mcp-Method header that disagrees with the body is refused", async () => {
    const { status, json } = await post(
      "alice",
      modernRequest("tools/list", {}, { "mcp-method": "tools/call" }),
    );
    expect(status).toBe(400);
    expect(json.error.code).toBe(-32020);
  });

  it("an Mcp-Name header that disagrees with the body, or is missing, is refused", async () => {
    const call = { name: "files__list", arguments: {} };
    const wrong = await post("alice", modernRequest("tools/call", call, { "mcp-name": "files__delete" }));
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toMatchObject({ code: -32020, message: expect.stringMatching(/files__delete/) });
    const request = modernRequest("tools/call", call);
    delete (request.headers as Record<string, string>)["mcp-name"];
    const missing = await post("alice", request);
    expect(missing.status).toBe(400);
    expect(missing.json.error.message).toMatch(/Mcp-Name header is absent/);
    const right = await post("alice", modernRequest("tools/call", call));
    expect(right.status).toBe(200);
    expect(right.json.result.structuredContent).toMatchObject({ files: expect.any(Array) });
  });

  it("an unsupported version is refused naming every version served, in both eras", async () => {
    const future = modernRequest("tools/list");
    const body = JSON.parse(future.body);
    body.params._meta["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
    const modern = await post("alice", {
      headers: { ...future.headers, "mcp-protocol-version": "2099-01-01" },
      body: JSON.stringify(body),
    });
    const legacy = await post("alice", {
      ...LEGACY_CALL,
      headers: { ...LEGACY_CALL.headers, "mcp-protocol-version": "2024-01-01" },
    });
    // A version later than any served, on a body without the envelope: it was read as a 2026
    // request missing its _meta (-32602) rather than as a version this server does not speak.
    const future2025 = await post("alice", {
      ...LEGACY_CALL,
      headers: { ...LEGACY_CALL.headers, "mcp-protocol-version": "2027-01-01" },
    });
    for (const { status, json } of [modern, legacy, future2025]) {
      expect(status).toBe(400);
      expect(json.error.code).toBe(-32022);
      expect(json.id).toBe(9);
    }
    // A request in the 2026 form is told what server/discover lists; a 2025 one, everything.
    expect(modern.json.error.data).toEqual({ supported: ["2026-07-28"], requested: "2099-01-01" });
    const everything = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];
    expect(legacy.json.error.data).toEqual({ supported: everything, requested: "2024-01-01" });
    expect(future2025.json.error).toEqual({
      code: -32022,
      message: `Unsupported protocol version "2027-01-01": use ${everything.join(", ")}.`,
      data: { supported: everything, requested: "2027-01-01" },
    });
  });

  it("ping and logging/setLevel are 2025 methods only: 2026-07-28 answers them -32601, status 404", async () => {
    for (const [method, params] of [
      ["ping", {}],
      ["logging/setLevel", { level: "debug" }],
    ] as const) {
      const modern = await post("alice", modernRequest(method, params));
      expect(modern.json.error, method).toEqual({ code: -32601, message: "Method not found" });
      // Refused before any handler ran, so the HTTP status says so (a handler's error is a 200).
      expect(modern.status, method).toBe(404);
      const legacy = await post("alice", {
        ...LEGACY_CALL,
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }),
      });
      expect(legacy.json, method).toEqual({ jsonrpc: "2.0", id: 9, result: {} });
    }
  });

  it("a request not sent as application/json is 415, and one whose Accept lacks a type 406, as in 2025", async () => {
    const answers = [];
    const wrong: Record<string, string>[] = [
      { "content-type": "text/plain" },
      { accept: "application/json" },
      { accept: "text/event-stream" },
    ];
    for (const request of [modernRequest("tools/list"), LEGACY_CALL]) {
      for (const headers of wrong) {
        const { status, json } = await post("alice", {
          ...request,
          headers: { ...request.headers, ...headers },
        });
        answers.push({ status, code: json.error.code, message: json.error.message });
      }
    }
    const unsupported = "Unsupported Media Type: Content-Type must be application/json";
    const unacceptable = "Not Acceptable: Client must accept both application/json and text/event-stream";
    const each = [
      { status: 415, code: -32000, message: unsupported },
      { status: 406, code: -32000, message: unacceptable },
      { status: 406, code: -32000, message: unacceptable },
    ];
    expect(answers).toEqual([...each, ...each]);
    expect((await post("alice", modernRequest("tools/list"))).status).toBe(200);
  });

  it("a response, an error or a batch under the 2026-07-28 header is an invalid request, not an unsupported version", async () => {
    const headers = { ...LEGACY_CALL.headers, "mcp-protocol-version": "2026-07-28" };
    const bodies = {
      response: { jsonrpc: "2.0", id: 3, result: {} },
      "error response": { jsonrpc: "2.0", id: 3, error: { code: -1, message: "no" } },
      batch: [{ jsonrpc: "2.0", id: 3, method: "ping" }],
    };
    for (const [what, body] of Object.entries(bodies)) {
      const { status, json } = await post("alice", { headers, body: JSON.stringify(body) });
      const kind = what === "batch" ? "a batch" : "a response";
      expect({ status, json }, what).toEqual({
        status: 400,
        json: {
          jsonrpc: "2.0",
          id: null,
          error: {
            code: -32600,
            message: `Invalid Request: a 2026-07-28 POST carries one request or notification, not ${kind}.`,
          },
        },
      });
    }
  });

  it("input responses that are not a map of response objects are -32602 before any tool runs", async () => {
    for (const inputResponses of [null, 5, [], { user_name: 12345 }]) {
      const { status, json } = await post(
        "alice",
        modernRequest("tools/call", { name: "files__list", arguments: {}, inputResponses }),
      );
      expect(status).toBe(400);
      expect(json.error).toMatchObject({ code: -32602, message: expect.stringMatching(/inputResponses/) });
    }
    const fine = await post(
      "alice",
      modernRequest("tools/call", { name: "files__list", arguments: {}, inputResponses: {} }),
    );
    expect(fine.json.result.structuredContent).toMatchObject({ files: expect.any(Array) });
  });

  it("a skill's digest changes exactly when its bytes change", async () => {
    const digest = async () => {
      const { json } = await post("alice", modernRequest("skills/list"));
      const skill = json.result.skills.find((s: { uri: string }) => s.uri.includes("careful-deletes"));
      return skill.resources.find((r: { uri: string }) => r.uri.endsWith("/SKILL.md")).digest as string;
    };
    const before = await digest();
    expect(before).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await digest()).toBe(before);
    await writeWorkspaceSkill("careful-deletes", SKILL.replace("anything", "any file"));
    const after = await digest();
    expect(after).not.toBe(before);
    await writeWorkspaceSkill("careful-deletes", SKILL);
    expect(await digest()).toBe(before);
  });
});
