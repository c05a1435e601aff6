import { stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { listTree } from "../helpers/fs-tree.ts";

let instance: TestAtrium | undefined;

afterAll(async () => {
  await instance?.stop();
});

describe("folders under the root are the instance's alone (issue 10, Security 10)", () => {
  it("every folder the writers make is 0700", async () => {
    instance = await startTestAtrium();
    const ws = await bootstrapWorkspace(instance, "alice");
    const skill = { name: "modes", description: "d", body: "b" };
    const calls = [
      instance.rest("alice", "POST", `/v1/workspaces/${ws}/files?name=a.txt`, "a", {
        "content-type": "text/plain",
      }),
      instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, skill),
      instance.rest("alice", "POST", `/v1/workspaces/${ws}/skills`, { ...skill, scope: "user" }),
    ];
    for (const call of calls) expect((await call).status).toBe(201);
    const doomed = await instance.rest("alice", "POST", "/v1/workspaces", { name: "Doomed" });
    const doomedId = ((await doomed.json()) as { id: string }).id;
    expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${doomedId}`)).status).toBe(204);

    const folders = (await listTree(instance.root)).filter((path) => path.endsWith("/"));
    for (const expected of [
      "_archive/",
      `${ws}/files/`,
      `${ws}/skills/.history/modes/`,
      "_instance/users/",
    ]) {
      expect(folders).toContain(expected);
    }
    const modes = await Promise.all(
      folders.map(
        async (path) =>
          `${path} ${((await stat(join(instance?.root ?? "", path))).mode & 0o777).toString(8)}`,
      ),
    );
    expect(modes.filter((line) => !line.endsWith(" 700"))).toEqual([]);
  });
});
