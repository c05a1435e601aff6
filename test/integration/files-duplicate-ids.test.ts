import { cp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { addMember } from "../helpers/members.ts";

// One `fl_` folder under two owners, or under one owner in two workspaces, as an operator's copy
// or a restore leaves it (adr/0111): after a restart each owner reaches their own copy by its
// bare id whatever the directory order, nobody reaches another's, and one owner's two copies are
// answered 409 by bare id until one is gone, with one warning naming both paths.

const ALICE = testPrincipal("alice").id;
const BOB = testPrincipal("bob").id;
const CAROL = testPrincipal("carol").id;

const instances: TestAtrium[] = [];

afterEach(async () => {
  while (instances.length > 0) await instances.pop()?.stop();
});

async function upload(instance: TestAtrium, ws: string, name: string, text: string): Promise<string> {
  const path = `/v1/workspaces/${ws}/files?name=${encodeURIComponent(name)}`;
  const response = await instance.rest("alice", "POST", path, text, { "content-type": "text/plain" });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** `cp -r` of one file folder to another place, as an operator or a restore does it. */
async function copyFileFolder(root: string, from: string[], to: string[]): Promise<string> {
  const target = join(root, ...to);
  await cp(join(root, ...from), target, { recursive: true });
  return target;
}

async function metaAs(instance: TestAtrium, user: string, id: string) {
  const response = await instance.rest(user, "GET", `/v1/files/${id}/meta`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function duplicateWarnings(lines: Array<Record<string, unknown>>, id: string) {
  return lines.filter((line) => line.fileId === id && /held in more than one place/.test(String(line.msg)));
}

describe("one file id in two places", () => {
  it("under two owners: each owner reaches their own copy by bare id and lists it, and a delete leaves the other's", async () => {
    const captured = capturingLogger("warn");
    const first = await startTestAtrium({ log: captured.log });
    instances.push(first);
    const ws = await bootstrapWorkspace(first, "alice");
    await addMember(first.rest, "alice", ws, "bob", { principalId: BOB });
    await addMember(first.rest, "alice", ws, "carol", { principalId: CAROL });
    const id = await upload(first, ws, "alice.txt", "alice's words");
    const files = join(ws, "files");
    const copy = await copyFileFolder(first.root, [files, ALICE, id], [files, BOB, id]);
    // Bob's copy is his (the path is authoritative); renamed, so the two can be told apart.
    const meta = JSON.parse(await readFile(join(copy, "meta.json"), "utf8")) as Record<string, unknown>;
    await writeFile(join(copy, "meta.json"), JSON.stringify({ ...meta, name: "bob.txt" }));
    await first.close();
    const second = await first.restart();
    instances.push(second);

    expect(await metaAs(second, "alice", id)).toMatchObject({
      status: 200,
      body: { id, name: "alice.txt", ownerId: ALICE },
    });
    expect(await metaAs(second, "bob", id)).toMatchObject({
      status: 200,
      body: { id, name: "bob.txt", ownerId: BOB },
    });
    const download = await second.rest("bob", "GET", `/v1/files/${id}`);
    expect(await download.text()).toBe("alice's words");
    // A member who holds no copy reaches neither.
    expect((await metaAs(second, "carol", id)).status).toBe(404);
    // Each owner's listing holds their own copy, once.
    for (const [user, name] of [
      ["alice", "alice.txt"],
      ["bob", "bob.txt"],
    ] as const) {
      const listed = await second.rest(user, "GET", `/v1/workspaces/${ws}/files`);
      const { files: page } = (await listed.json()) as { files: Array<{ id: string; name: string }> };
      expect(page.map((f) => [f.id, f.name])).toEqual([[id, name]]);
    }
    const warned = duplicateWarnings(captured.lines, id);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({
      level: 40,
      paths: expect.arrayContaining([join(second.root, files, ALICE, id), copy]),
    });

    // Alice's delete takes her copy only: Bob's is still his, by bare id too.
    expect((await second.rest("alice", "DELETE", `/v1/files/${id}`)).status).toBe(204);
    expect((await metaAs(second, "alice", id)).status).toBe(404);
    expect(await metaAs(second, "bob", id)).toMatchObject({ status: 200, body: { name: "bob.txt" } });
  });

  it("under one owner in two workspaces: answered 409 by bare id until one copy is gone, then the other", async () => {
    const captured = capturingLogger("warn");
    const first = await startTestAtrium({ log: captured.log });
    instances.push(first);
    const ws = await bootstrapWorkspace(first, "alice");
    const created = await first.rest("alice", "POST", "/v1/workspaces", { name: "Second" });
    const other = ((await created.json()) as { id: string }).id;
    const id = await upload(first, ws, "twice.txt", "one text, two places");
    const copy = await copyFileFolder(first.root, [ws, "files", ALICE, id], [other, "files", ALICE, id]);
    await first.close();
    const second = await first.restart();
    instances.push(second);

    const ambiguous = await metaAs(second, "alice", id);
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body).toMatchObject({ error: { code: "file_id_ambiguous" } });
    expect(JSON.stringify(ambiguous.body)).toContain(ws);
    expect(JSON.stringify(ambiguous.body)).toContain(other);
    expect((await second.rest("alice", "GET", `/v1/files/${id}`)).status).toBe(409);
    expect((await second.rest("alice", "DELETE", `/v1/files/${id}`)).status).toBe(409);
    // Each workspace's own tools still reach its copy.
    const client = await second.mcpClient("alice", other);
    const info = await client.callTool({ name: "files__info", arguments: { id } });
    expect(info.isError).toBeFalsy();
    expect(info.structuredContent).toMatchObject({ id, workspaceId: other, ownerId: ALICE });
    expect(duplicateWarnings(captured.lines, id)).toHaveLength(1);

    // The operator moves one copy out: the bare id is the other's again, without a restart.
    await rm(copy, { recursive: true });
    expect(await metaAs(second, "alice", id)).toMatchObject({ status: 200, body: { workspaceId: ws } });
  });
});
