import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A workspace's create renames its staged folder into the root, then flushes the root. When that
// flush failed, the folder stayed in place unremembered: the creator was answered 500, the
// workspace was not listed, and the next boot served it, so a retry after the error made two.
// Not flushed is not created: the folder goes back out before the creator is told (ADR 0112).

let t: TestAtrium;
beforeAll(async () => {
  t = await startTestAtrium();
  await t.rest("alice", "GET", "/v1/workspaces");
});
afterAll(async () => {
  await t?.stop();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

const namesOf = async (person: string) =>
  (
    (await (await t.rest(person, "GET", "/v1/workspaces")).json()) as { workspaces: { name: string }[] }
  ).workspaces.map((ws) => ws.name);

describe("a workspace create whose root flush fails", () => {
  it("is answered 500 and leaves no workspace, before or after a restart", async () => {
    const before = await readdir(t.root);
    let status = 0;
    await journalDuring(
      async () => {
        status = (await t.rest("alice", "POST", "/v1/workspaces", { name: "Unflushed team" })).status;
      },
      { sync: (path) => (path === t.root ? eio() : undefined) },
    );
    expect(status).toBe(500);
    expect(await namesOf("alice")).not.toContain("Unflushed team");
    expect((await readdir(t.root)).filter((entry) => entry.startsWith("ws_"))).toEqual(
      before.filter((entry) => entry.startsWith("ws_")),
    );
    t = await t.restart();
    expect(await namesOf("alice")).not.toContain("Unflushed team");
    const created = await t.rest("alice", "POST", "/v1/workspaces", { name: "Unflushed team" });
    expect(created.status).toBe(201);
    expect(existsSync(`${t.root}/${((await created.json()) as { id: string }).id}`)).toBe(true);
  });
});
