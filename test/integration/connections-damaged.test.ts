import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { capturingLogger, startTestAtrium } from "../helpers/atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { startRemoteServer } from "../helpers/remote-server.ts";

// A connection whose record or current snapshot no longer parses (a disk fault, a hand edit) is
// left out of listings, its file logged once, so the workspace's other connections stay listed;
// looked at alone it is refused as damaged, and an admin can remove it and use its name again.

interface Listed {
  connections: { name: string }[];
}

/**
 * An instance with a workspace holding two connections, gh and jira (the caller's own when
 * `personal`), restarted so their records are read from disk again rather than from what the
 * writer kept.
 */
async function twoConnections(
  personal: boolean,
  onTestFinished: (cleanup: () => Promise<void>) => void,
  log?: ReturnType<typeof capturingLogger>["log"],
) {
  const dir = await keyedDir("atrium-connections-damaged-");
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const remote = await startRemoteServer();
  onTestFinished(() => remote.stop());
  const atrium = await startTestAtrium({
    dir,
    ...(log ? { log } : {}),
    sections: { credentials: CREDENTIALS_SECTION, connections: { allowPrivateAddresses: true } },
  });
  onTestFinished(() => atrium.close());
  const created = await atrium.rest("alice", "POST", "/v1/workspaces", { name: "ops" });
  const ws = ((await created.json()) as { id: string }).id;
  for (const name of ["gh", "jira"]) {
    const added = await atrium.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      ...(personal ? { personal: true } : {}),
      name,
      url: remote.url.href,
    });
    expect(added.status).toBe(201);
  }
  const restarted = await atrium.restart();
  onTestFinished(() => restarted.close());
  return { remote, restarted, ws };
}

describe("a damaged connection", { timeout: 120_000 }, () => {
  it.for([
    ["its connection.json", "connection.json"],
    ["its current snapshot", join("snapshots", "1.json")],
  ] as const)(
    "with %s not JSON is left out of the listing, logged once naming the file",
    async ([, file], { onTestFinished }) => {
      const captured = capturingLogger("info");
      const { remote, restarted, ws } = await twoConnections(false, onTestFinished, captured.log);
      const path = join(restarted.root, ws, "connections", "servers", "gh", file);
      await writeFile(path, '{"name": "gh",');

      for (let i = 0; i < 2; i++) {
        const listed = await restarted.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
        expect(listed.status).toBe(200);
        expect(((await listed.json()) as Listed).connections.map((c) => c.name)).toEqual(["jira"]);
      }
      const logged = captured.lines.filter((line) => line.path === path);
      expect(logged).toHaveLength(1);
      expect(logged[0]?.msg).toContain(`${path} is not valid JSON (it ends before its JSON does).`);
      // Looked at alone it is refused as damaged, saying what can be done and not where it lies;
      // the file was logged once already.
      const alone = await restarted.rest("alice", "GET", `/v1/workspaces/${ws}/connections/gh`);
      expect(alone.status).toBe(500);
      const refusal = ((await alone.json()) as { error: { code: string; message: string } }).error;
      expect(refusal.code).toBe("connection_damaged");
      expect(refusal.message).toContain("An admin can remove it and add it again");
      expect(refusal.message).not.toContain(restarted.root);
      expect(captured.lines.filter((line) => line.path === path)).toHaveLength(1);
      // An admin removes it, and its name can be used again.
      const removed = await restarted.rest("alice", "DELETE", `/v1/workspaces/${ws}/connections/gh`);
      expect(removed.status).toBe(204);
      const again = await restarted.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
        name: "gh",
        url: remote.url.href,
      });
      expect(again.status).toBe(201);
      const relisted = await restarted.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
      expect(((await relisted.json()) as Listed).connections.map((c) => c.name)).toEqual(["gh", "jira"]);
    },
  );
});

describe("a damaged personal connection", { timeout: 120_000 }, () => {
  it("is left out of its owner's listing, refused as damaged alone, and removable by its owner", async ({
    onTestFinished,
  }) => {
    const { remote, restarted, ws } = await twoConnections(true, onTestFinished);
    const alice = restarted.atrium.users.list().find((user) => user.displayName === "alice")?.id as string;
    const folder = join(restarted.root, "_instance", "users", alice, "connections", "servers", "my_gh");
    await writeFile(join(folder, "connection.json"), '{"name": "my_gh",');

    const listed = await restarted.rest("alice", "GET", `/v1/workspaces/${ws}/connections`);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as Listed).connections.map((c) => c.name)).toEqual(["my_jira"]);
    const alone = await restarted.rest("alice", "GET", `/v1/workspaces/${ws}/connections/my_gh`);
    expect(alone.status).toBe(500);
    expect(((await alone.json()) as { error: { code: string } }).error.code).toBe("connection_damaged");
    const removed = await restarted.rest("alice", "DELETE", `/v1/workspaces/${ws}/connections/my_gh`);
    expect(removed.status).toBe(204);
    const again = await restarted.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      personal: true,
      name: "gh",
      url: remote.url.href,
    });
    expect(again.status).toBe(201);
  });
});
