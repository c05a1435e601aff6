import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, TEST_USER_HEADER, type TestAtrium } from "../helpers/atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { type RemoteServer, startRemoteServer } from "../helpers/remote-server.ts";

// Server-scope skills whose names meet: connection `self` publishes the skill `using-atrium-files`
// of the Atrium it reaches as `self-using-atrium-files`, and a connection named
// `self-using-atrium-files` publishes its server's instructions under that same name.

const CLASHING = "self-using-atrium-files";
let dir: string;
let instance: TestAtrium;
let fixture: RemoteServer;
let ws: string;

function rest(method: string, path: string, body?: Record<string, unknown>) {
  return instance.rest("alice", method, `/v1/workspaces/${ws}${path}`, body);
}

async function skills(): Promise<{
  names: string[];
  problems: { scope: string; name: string; message: string }[];
}> {
  const body = (await (await rest("GET", "/skills")).json()) as {
    skills: { scope: string; name: string }[];
    problems: { scope: string; name: string; message: string }[];
  };
  return {
    names: body.skills.filter((skill) => skill.scope === "server").map((skill) => skill.name),
    problems: body.problems,
  };
}

beforeAll(async () => {
  dir = await keyedDir("atrium-connection-skills-");
  fixture = await startRemoteServer();
  instance = await startTestAtrium({
    dir,
    sections: { credentials: CREDENTIALS_SECTION, connections: { allowPrivateAddresses: true } },
  });
  ws = await bootstrapWorkspace(instance, "alice");
  const remoteWs = await bootstrapWorkspace(instance, "dora");
  const self = await rest("POST", "/connections", {
    name: "self",
    url: new URL(`/mcp/${remoteWs}`, instance.url).href,
    auth: { kind: "static", header: TEST_USER_HEADER, value: "dora" },
  });
  expect(self.status).toBe(201);
});

afterAll(async () => {
  await instance?.stop();
  await fixture?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("two connections' skills that map to one name", () => {
  it("serve neither server's text under it, list the clash as a problem, and serve it again once parted", async () => {
    expect((await skills()).names).toContain(CLASHING);
    expect((await rest("POST", "/connections", { name: CLASHING, url: fixture.url.href })).status).toBe(201);

    const clashed = await skills();
    expect(clashed.names).not.toContain(CLASHING);
    expect(clashed.problems).toContainEqual({
      scope: "server",
      name: CLASHING,
      message: expect.stringContaining(`connections "self", "${CLASHING}"`),
    });
    expect((await rest("GET", `/skills/${CLASHING}`)).status).toBe(404);

    expect((await rest("DELETE", `/connections/${CLASHING}`)).status).toBe(204);
    const parted = await skills();
    expect(parted.names).toContain(CLASHING);
    expect(parted.problems).toEqual([]);
    expect(
      ((await (await rest("GET", `/skills/${CLASHING}`)).json()) as { body: string }).body,
    ).not.toContain("A test server");
  });
});

describe("a connection taken out of service", () => {
  /** The server-scope skill names a member sees, and the instructions their MCP client is given. */
  async function seen(): Promise<{ names: string[]; instructions: string }> {
    const client = await instance.mcpClient("alice", ws);
    try {
      return { names: (await skills()).names, instructions: client.getInstructions() ?? "" };
    } finally {
      await client.close();
    }
  }

  it("publishes neither its server's instructions nor its skills until it is enabled again", async () => {
    expect((await rest("POST", "/connections", { name: "plain", url: fixture.url.href })).status).toBe(201);
    const served = await seen();
    expect(served.names).toEqual(expect.arrayContaining(["plain", CLASHING]));
    expect(served.instructions).toContain('"plain"');
    expect(served.instructions).toContain(CLASHING);

    for (const name of ["plain", "self"])
      expect((await rest("POST", `/connections/${name}/disable`)).status).toBe(200);
    const disabled = await seen();
    expect(disabled.names).not.toContain("plain");
    expect(disabled.names.filter((name) => name.startsWith("self"))).toEqual([]);
    expect(disabled.instructions).not.toContain('"plain"');
    expect(disabled.instructions).not.toContain(CLASHING);
    expect((await rest("GET", "/skills/plain")).status).toBe(404);
    expect((await rest("GET", `/skills/${CLASHING}`)).status).toBe(404);

    for (const name of ["plain", "self"])
      expect((await rest("POST", `/connections/${name}/enable`)).status).toBe(200);
    expect((await seen()).names).toEqual(expect.arrayContaining(["plain", CLASHING]));
    expect((await rest("GET", "/skills/plain")).status).toBe(200);
  });
});
