import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import type { Workspace } from "../../src/workspace/model.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { addMember, invite } from "../helpers/members.ts";

const instances: TestAtrium[] = [];

afterEach(async () => {
  while (instances.length > 0) await instances.pop()?.stop();
});

async function started(): Promise<TestAtrium> {
  const instance = await startTestAtrium();
  instances.push(instance);
  return instance;
}

describe("concurrent writes", () => {
  it("50 concurrent files__write calls to one workspace all land, each as its own file", async () => {
    const instance = await started();
    const ws = await bootstrapWorkspace(instance, "alice");
    // Several clients, so the writes travel as truly parallel HTTP requests.
    const clients = await Promise.all(Array.from({ length: 5 }, () => instance.mcpClient("alice", ws)));
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const client = clients[i % clients.length];
        if (!client) throw new Error("no client");
        return (await client.callTool({
          name: "files__write",
          arguments: { name: `file-${i}.txt`, text: `content ${i}` },
        })) as CallToolResult;
      }),
    );
    for (const result of results) expect(result.isError ?? false).toBe(false);
    const writtenIds = results.map((r) => (r.structuredContent as { id: string }).id);
    expect(new Set(writtenIds).size).toBe(50);

    const [first] = clients;
    const list = (await first?.callTool({ name: "files__list", arguments: {} })) as CallToolResult;
    const files = (list.structuredContent as { files: Array<{ id: string; name: string; size: number }> })
      .files;
    expect(files).toHaveLength(50);
    expect(new Set(files.map((f) => f.id))).toEqual(new Set(writtenIds));
    expect(new Set(files.map((f) => f.name)).size).toBe(50);
    for (const file of files) {
      const i = Number(file.name.match(/^file-(\d+)\.txt$/)?.[1]);
      expect(file.size).toBe(Buffer.byteLength(`content ${i}`));
    }

    const ownerDir = join(instance.root, ws, "files", testPrincipal("alice").id);
    const onDisk = await readdir(ownerDir);
    expect(onDisk.filter((name) => name.startsWith("fl_")).sort()).toEqual([...writtenIds].sort());
    expect(onDisk.filter((name) => name.startsWith("."))).toEqual([]);
  });
});

describe("concurrent deletes", () => {
  it("concurrent deletes of one file: one succeeds, the others are 404, none is a server error", async () => {
    const instance = await started();
    const ws = await bootstrapWorkspace(instance, "alice");
    const client = await instance.mcpClient("alice", ws);
    for (let round = 0; round < 3; round++) {
      const upload = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=doomed.txt`, "x");
      const { id } = (await upload.json()) as { id: string };
      const [rest, mcp] = await Promise.all([
        Promise.all(Array.from({ length: 4 }, () => instance.rest("alice", "DELETE", `/v1/files/${id}`))),
        Promise.all(
          Array.from(
            { length: 4 },
            async () =>
              (await client.callTool({ name: "files__delete", arguments: { id } })) as CallToolResult,
          ),
        ),
      ]);
      const statuses = rest.map((r) => r.status);
      const mcpSucceeded = mcp.filter((r) => !r.isError).length;
      expect(
        statuses.every((status) => status === 204 || status === 404),
        statuses.join(","),
      ).toBe(true);
      expect(statuses.filter((status) => status === 204).length + mcpSucceeded).toBe(1);
      for (const result of mcp.filter((r) => r.isError)) {
        const first = result.content[0];
        expect(first?.type === "text" ? first.text : "").toMatch(/No file with that id/);
      }
    }
  });
});

describe("concurrent membership changes", () => {
  it("concurrent acceptances, invitations and role changes to one workspace lose nothing", async () => {
    const instance = await started();
    const ws = await bootstrapWorkspace(instance, "alice");
    const rest = instance.rest.bind(instance);
    const early = Array.from({ length: 10 }, (_, i) => `early-${i}`);
    const late = Array.from({ length: 20 }, (_, i) => `late-${i}`);
    // Everyone signs in once, so the directory knows them (and their email).
    await Promise.all([...early, ...late].map((name) => instance.rest(name, "GET", "/v1/workspaces")));
    for (const name of early)
      await addMember(rest, "alice", ws, name, { principalId: testPrincipal(name).id });
    const invitations = await Promise.all(
      late.map((name, i) =>
        invite(
          rest,
          "alice",
          ws,
          i % 2 === 0 ? { email: `${name}@example.test` } : { principalId: testPrincipal(name).id },
          i % 3 === 0 ? "admin" : "member",
        ),
      ),
    );

    const responses = await Promise.all([
      ...late.map((name, i) => instance.rest(name, "POST", `/v1/invitations/${invitations[i]?.id}/accept`)),
      // Each invitation is taken once: a second acceptance at the same moment finds nothing.
      ...late.map((name, i) => instance.rest(name, "POST", `/v1/invitations/${invitations[i]?.id}/accept`)),
      ...early.map((name) =>
        instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${testPrincipal(name).id}`, {
          role: "admin",
        }),
      ),
      instance.rest("alice", "PATCH", `/v1/workspaces/${ws}`, { name: "Renamed under load" }),
    ]);
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 404)).toHaveLength(late.length);
    expect(statuses.filter((status) => status < 300)).toHaveLength(statuses.length - late.length);

    const expected = new Map<string, string>([[testPrincipal("alice").id, "admin"]]);
    for (const name of early) expected.set(testPrincipal(name).id, "admin");
    for (const [i, name] of late.entries())
      expected.set(testPrincipal(name).id, i % 3 === 0 ? "admin" : "member");

    const onDisk = JSON.parse(await readFile(join(instance.root, ws, "workspace.json"), "utf8")) as Workspace;
    const fresh = await instance.restart();
    instances.push(fresh);
    const reloaded = fresh.atrium.workspaces.get(ws);
    for (const ws of [onDisk, reloaded]) {
      expect(ws?.name).toBe("Renamed under load");
      expect(ws?.members).toHaveLength(expected.size);
      expect(new Map(ws?.members.map((m) => [m.principalId, m.role]))).toEqual(expected);
    }
  });
});

describe("concurrent first contact", () => {
  it("concurrent first bootstraps of one new person create exactly one workspace", async () => {
    const instance = await started();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => instance.rest("newcomer", "GET", "/v1/bootstrap")),
    );
    const ids = await Promise.all(
      responses.map(async (response) => {
        expect(response.status).toBe(200);
        const body = (await response.json()) as { workspaces: Array<{ id: string }> };
        expect(body.workspaces).toHaveLength(1);
        return body.workspaces[0]?.id;
      }),
    );
    expect(new Set(ids).size).toBe(1);

    const folders = (await readdir(instance.root)).filter((name) => name.startsWith("ws_"));
    expect(folders).toEqual([ids[0]]);
    expect((await readdir(instance.root)).filter((name) => name.startsWith("."))).toEqual([]);
  });

  it("concurrent first bootstraps of different people create one workspace each", async () => {
    const instance = await started();
    const names = Array.from({ length: 10 }, (_, i) => `person-${i}`);
    const ids = await Promise.all(
      names.flatMap((name) => [name, name]).map((name) => bootstrapWorkspace(instance, name)),
    );
    expect(new Set(ids).size).toBe(names.length);
    expect((await readdir(instance.root)).filter((name) => name.startsWith("ws_"))).toHaveLength(
      names.length,
    );
  });
});
