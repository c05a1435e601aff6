import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { beforeEach, describe, expect, it } from "vitest";
import type { RunningAtrium } from "../../src/server.ts";
import type { RestBody } from "../helpers/atrium.ts";
import { MCP_ERAS, type McpEra, refusedConnect } from "../helpers/mcp-eras.ts";
import {
  type JsonRpcMessage,
  type McpHttpRequest,
  mcpRequest,
  readMcpMessage,
} from "../helpers/mcp-request.ts";
import { type InviteeBody, invite, addMember as inviteAndAccept } from "../helpers/members.ts";
import { authorize, pkcePair, registerClient } from "../helpers/oauth.ts";

/**
 * The kernel's wall tests, run once per way of telling people apart
 * (test/integration/wall.test.ts: the test header; wall-signed-in.test.ts: real people
 * signed in through an OpenID provider in a browser). Not a *.test.ts file: vitest collects
 * it only through those two. Every test that reaches /mcp runs once per protocol era in
 * MCP_ERAS (test/helpers/mcp-eras.ts), the era in its name: the wall holds in each.
 */

/**
 * How a test says "alice does this". A name is a person; each mode decides what that
 * person presents: a header naming them, or the session cookie of their browser sign-in
 * (REST) and an Atrium access token for the one workspace (MCP).
 */
export interface WallPeople {
  readonly url: string;
  /** The running instance, to look at its stores directly. */
  readonly atrium: RunningAtrium;
  /** The principal id this person has on this instance. */
  id(name: string): string;
  email(name: string): string;
  /** The person arrives: after this, the instance knows them (by id and by email). */
  signIn(name: string): Promise<void>;
  /** A browser session cookie (`name=value`) for the person. */
  sessionCookie(name: string): Promise<string>;
  /** An Atrium access token for the person at `/mcp/<workspaceId>`, through /oauth/authorize. */
  accessToken(name: string, workspaceId: string): Promise<string>;
  /** A REST request as the person; `null` presents no credential at all. */
  rest(
    name: string | null,
    method: string,
    path: string,
    body?: RestBody,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /**
   * One JSON-RPC request POSTed to `/mcp/<workspaceId>` as the person, its headers and body as
   * built for an era (test/helpers/mcp-request.ts); `null` presents nothing.
   */
  mcp(name: string | null, workspaceId: string, request: McpHttpRequest): Promise<Response>;
  /** The SDK's Client at `/mcp/<workspaceId>` as the person, speaking `era`. */
  mcpClient(name: string, workspaceId: string, era: McpEra): Promise<Client>;
}

/**
 * `header`: every MCP call names its person, so a stranger can knock on any workspace URL.
 * `signed-in`: an MCP call carries a token issued for one workspace URL to a member of it;
 * a stranger never holds one (tests marked header-only say what stands in for them).
 */
export type WallMode = "header" | "signed-in";

const NOWHERE = "ws_0123456789abcdef";
const listTools: JsonRpcMessage = { jsonrpc: "2.0", id: 1, method: "tools/list" };

function callMessage(name: string, args: Record<string, unknown>): JsonRpcMessage {
  return { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } };
}

/** Defines the wall tests; `people()` is called before each test, after the file's own hooks. */
export function describeWall(mode: WallMode, people: () => WallPeople): void {
  // For a stranger's call at /mcp/ws_…, which only `header` can make: a header names its
  // person at any URL, so the call reaches the workspace gate. A signed-in stranger holds no
  // token for the workspace (/oauth/authorize refuses them) and so has no such call to make;
  // "a stranger can get no access token …" is the wall they meet instead, in both modes.
  const headerOnly = it.skipIf(mode !== "header");
  // A test that reaches /mcp runs once per era, as "<name> (MCP <era>)"; adding an era to
  // MCP_ERAS is the one change that runs the wall in it.
  const overMcp = it.each(MCP_ERAS);
  const headerOnlyOverMcp = headerOnly.each(MCP_ERAS);

  let p: WallPeople;
  let aliceWs: string;

  beforeEach(async () => {
    p = people();
    // A fresh workspace per test, so tests may share an instance and its signed-in people.
    aliceWs = await newWorkspace("alice");
  });

  async function newWorkspace(owner: string, name = `${owner}'s workspace`): Promise<string> {
    const response = await p.rest(owner, "POST", "/v1/workspaces", { name });
    expect(response.status, `${owner} creates "${name}"`).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  /** Raw MCP as a client speaking `era` sends it. */
  function mcpIn(era: McpEra) {
    const post = (user: string | null, ws: string, message: JsonRpcMessage) =>
      p.mcp(user, ws, mcpRequest(era, message));
    const callTool = (user: string, ws: string, name: string, args: Record<string, unknown>) =>
      post(user, ws, callMessage(name, args));
    async function toolResult(user: string, ws: string, name: string, args: Record<string, unknown>) {
      const response = await callTool(user, ws, name, args);
      expect(response.status).toBe(200);
      return ((await readMcpMessage(response)) as { result: CallToolResult }).result;
    }
    async function writeFile(user: string, ws: string, name: string, text: string): Promise<string> {
      const result = await toolResult(user, ws, "files__write", { name, text });
      expect(result.isError ?? false).toBe(false);
      return (result.structuredContent as { id: string }).id;
    }
    return { post, callTool, toolResult, writeFile };
  }

  /** `by` invites `person` (by id unless `invitee` says otherwise) and `person` accepts. */
  function addMember(
    by: string,
    ws: string,
    person: string,
    role?: "admin" | "member",
    invitee?: InviteeBody,
  ) {
    return inviteAndAccept(p.rest, by, ws, person, invitee ?? { principalId: p.id(person) }, role);
  }

  async function memberIds(ws: string): Promise<string[]> {
    const response = await p.rest("alice", "GET", `/v1/workspaces/${ws}/members`);
    expect(response.status).toBe(200);
    return ((await response.json()) as { members: Array<{ principalId: string }> }).members.map(
      (m) => m.principalId,
    );
  }

  async function fileIds(user: string, ws: string): Promise<string[]> {
    const response = await p.rest(user, "GET", `/v1/workspaces/${ws}/files`);
    expect(response.status).toBe(200);
    return ((await response.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id);
  }

  async function workspaceIds(user: string): Promise<string[]> {
    const response = await p.rest(user, "GET", "/v1/workspaces");
    expect(response.status).toBe(200);
    return ((await response.json()) as { workspaces: Array<{ id: string }> }).workspaces.map((w) => w.id);
  }

  describe("a stranger meets the wall", () => {
    // Signed in, bob can get no token for alice's workspace to knock with: the next test
    // ("a stranger can get no access token …") is that wall, in both modes.
    headerOnlyOverMcp(
      "cannot list or call the tools of another person's workspace over MCP (MCP %s)",
      async (era) => {
        const { post, callTool } = mcpIn(era);
        await p.signIn("bob");
        // The SDK client cannot connect; the raw POSTs below pin the 404 itself in every era.
        await expect(p.mcpClient("bob", aliceWs, era)).rejects.toMatchObject(refusedConnect(era, 404));
        expect((await post("bob", aliceWs, listTools)).status).toBe(404);
        const write = await callTool("bob", aliceWs, "files__write", { name: "planted.txt", text: "x" });
        expect(write.status).toBe(404);
        expect(await fileIds("alice", aliceWs)).toEqual([]);
      },
    );

    overMcp(
      "a stranger can get no access token for another person's workspace, and their own opens no other (MCP %s)",
      async (era) => {
        const bobWs = await newWorkspace("bob");
        const cookie = await p.sessionCookie("bob");
        const { client_id: clientId } = await registerClient(p);
        const ask = (workspaceId: string) =>
          authorize(p, cookie, { clientId, workspaceId, challenge: pkcePair().challenge });
        const refused = await ask(aliceWs);
        const nowhere = await ask(NOWHERE);
        expect(refused.status).toBe(403);
        expect(nowhere.status).toBe(403);
        const refusedPage = await refused.text();
        expect(refusedPage).toContain("error=access_denied");
        expect(refusedPage).toBe(await nowhere.text());
        expect((await ask(bobWs)).status).toBe(200);

        const token = await p.accessToken("bob", bobWs);
        const withToken = (ws: string, message: JsonRpcMessage) => {
          const { headers, body } = mcpRequest(era, message);
          return p.rest(null, "POST", `/mcp/${ws}`, body, { ...headers, authorization: `Bearer ${token}` });
        };
        expect((await withToken(bobWs, listTools)).status).toBe(200);
        const write = callMessage("files__write", { name: "planted.txt", text: "x" });
        for (const message of [listTools, write]) {
          const foreign = await withToken(aliceWs, message);
          const unknown = await withToken(NOWHERE, message);
          expect(foreign.status).toBe(401);
          expect(foreign.headers.get("www-authenticate")).toContain('error="invalid_token"');
          expect(foreign.headers.get("www-authenticate")?.replaceAll(aliceWs, NOWHERE)).toBe(
            unknown.headers.get("www-authenticate"),
          );
          expect(await foreign.text()).toBe(await unknown.text());
        }
        expect(await fileIds("alice", aliceWs)).toEqual([]);
      },
    );

    it("cannot list or call the tools of another person's workspace over REST", async () => {
      const tools = await p.rest("bob", "GET", `/v1/workspaces/${aliceWs}/tools`);
      expect(tools.status).toBe(404);
      const call = await p.rest("bob", "POST", `/v1/workspaces/${aliceWs}/tools/call`, {
        name: "files__write",
        arguments: { name: "planted.txt", text: "x" },
      });
      expect(call.status).toBe(404);
      const upload = await p.rest("bob", "POST", `/v1/workspaces/${aliceWs}/files?name=planted`, "x");
      expect(upload.status).toBe(404);
      const own = await p.rest("alice", "GET", `/v1/workspaces/${aliceWs}/tools`);
      expect(own.status).toBe(200);
      expect(await fileIds("alice", aliceWs)).toEqual([]);
    });

    overMcp("cannot read, describe or delete another person's file by its id (MCP %s)", async (era) => {
      const { toolResult, writeFile } = mcpIn(era);
      const bobWs = await newWorkspace("bob");
      const fileId = await writeFile("alice", aliceWs, "secret.txt", "alice's secret");

      expect((await p.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(404);
      expect((await p.rest("bob", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
      expect((await p.rest("bob", "DELETE", `/v1/files/${fileId}`)).status).toBe(404);
      for (const tool of ["files__read", "files__info", "files__delete"]) {
        const result = await toolResult("bob", bobWs, tool, { id: fileId });
        expect(result.isError, tool).toBe(true);
        expect(JSON.stringify(result)).not.toContain("alice's secret");
      }

      const stillThere = await p.rest("alice", "GET", `/v1/files/${fileId}`);
      expect(stillThere.status).toBe(200);
      expect(await stillThere.text()).toBe("alice's secret");
    });

    overMcp(
      "gets one byte-identical 404 for nonexistent, archived, malformed, not-a-member and left workspaces (MCP %s)",
      async (era) => {
        const { post } = mcpIn(era);
        const archivedId = await newWorkspace("alice", "Old");
        const bobWs = await newWorkspace("bob");
        const leftWs = await newWorkspace("bob", "Alice was here");
        await addMember("bob", leftWs, "alice");
        // Alice used both over MCP before losing them: signed in, she holds a token for each.
        for (const ws of [archivedId, leftWs]) expect((await post("alice", ws, listTools)).status).toBe(200);
        expect((await p.rest("alice", "DELETE", `/v1/workspaces/${archivedId}`)).status).toBe(204);
        expect(
          (await p.rest("alice", "DELETE", `/v1/workspaces/${leftWs}/members/${p.id("alice")}`)).status,
        ).toBe(204);

        const cases: Record<string, string> = {
          nonexistent: NOWHERE,
          archived: archivedId,
          "malformed ws_XYZ": "ws_XYZ",
          "too short": "ws_0123",
          uppercase: "ws_0123456789ABCDEF",
          "not a member": bobWs,
          "left it": leftWs,
        };
        const expected = await p.rest("alice", "GET", "/v1/workspaces/ws_fedcba9876543210");
        const expectedBody = await expected.text();
        expect(expected.status).toBe(404);
        expect(JSON.parse(expectedBody).error.code).toBe("workspace_not_found");

        for (const [label, id] of Object.entries(cases)) {
          for (const path of [
            `/v1/workspaces/${id}`,
            `/v1/workspaces/${id}/files`,
            `/v1/workspaces/${id}/members`,
            `/v1/workspaces/${id}/invitations`,
          ]) {
            const response = await p.rest("alice", "GET", path);
            expect(response.status, `${label} ${path}`).toBe(404);
            expect(response.headers.get("content-type"), `${label} ${path}`).toBe(
              expected.headers.get("content-type"),
            );
            expect(await response.text(), `${label} ${path}`).toBe(expectedBody);
          }
        }
        for (const [label, id] of Object.entries({ archived: archivedId, "left it": leftWs })) {
          const mcp = await post("alice", id, listTools);
          if (mode === "signed-in") {
            // Her token's grant ended with the membership (and with the archive): it is no
            // credential at all any more, wherever it is presented.
            expect(mcp.status, `${label} over MCP`).toBe(401);
            expect(mcp.headers.get("www-authenticate"), `${label} over MCP`).toContain(
              'error="invalid_token"',
            );
            continue;
          }
          expect(mcp.status, `${label} over MCP`).toBe(404);
          expect(mcp.headers.get("content-type"), `${label} over MCP`).toBe(
            expected.headers.get("content-type"),
          );
          expect(await mcp.text(), `${label} over MCP`).toBe(expectedBody);
        }
      },
    );

    // Signed in, alice can get no token for these URLs (authorize refuses, or the resource is
    // not a workspace URL), so there is nothing to present; "a stranger can get no access
    // token …" covers that wall.
    headerOnlyOverMcp(
      "gets the same 404 over MCP for workspaces the caller never belonged to (MCP %s)",
      async (era) => {
        const { post } = mcpIn(era);
        const bobWs = await newWorkspace("bob");
        const expected = await p.rest("alice", "GET", "/v1/workspaces/ws_fedcba9876543210");
        const expectedBody = await expected.text();
        expect(expected.status).toBe(404);
        const cases: Record<string, string> = {
          nonexistent: NOWHERE,
          "malformed ws_XYZ": "ws_XYZ",
          "too short": "ws_0123",
          uppercase: "ws_0123456789ABCDEF",
          "not a member": bobWs,
        };
        for (const [label, id] of Object.entries(cases)) {
          const mcp = await post("alice", id, listTools);
          expect(mcp.status, `${label} over MCP`).toBe(404);
          expect(await mcp.text(), `${label} over MCP`).toBe(expectedBody);
        }
      },
    );

    it("does not see another person's workspace in its own list", async () => {
      const bobWs = await newWorkspace("bob");
      const before = await workspaceIds("bob");
      const aliceSecond = await newWorkspace("alice", "alice's second workspace");
      const after = await workspaceIds("bob");
      expect(after).toEqual(before);
      expect(after).toContain(bobWs);
      expect(after).not.toContain(aliceWs);
      expect(after).not.toContain(aliceSecond);
      expect(await workspaceIds("alice")).toEqual(expect.arrayContaining([aliceWs, aliceSecond]));
      // Everything bob is shown is his: one he is a member of, however long the instance has run.
      for (const id of after) expect(p.atrium.workspaces.roleOf(id, p.id("bob")), id).toBeDefined();
    });
  });

  describe("membership opens and closes the wall", () => {
    overMcp(
      "a person invited by email reaches the workspace over MCP and REST only after accepting (MCP %s)",
      async (era) => {
        // Someone who has never signed in: no other test (nor this one in another era) uses
        // this name. An invitation by email waits for whoever signs in with that (verified) address.
        const dave = `dave-${era}`;
        const email = p.email(dave);
        const invitation = await invite(p.rest, "alice", aliceWs, { email: email.toUpperCase() });
        await p.signIn(dave);
        const expectedBody = await (await p.rest(dave, "GET", "/v1/workspaces/ws_fedcba9876543210")).text();
        for (const path of [`/v1/workspaces/${aliceWs}`, `/v1/workspaces/${aliceWs}/files`]) {
          const before = await p.rest(dave, "GET", path);
          expect(before.status, path).toBe(404);
          expect(await before.text(), path).toBe(expectedBody);
        }
        expect(await workspaceIds(dave)).not.toContain(aliceWs);
        expect(await memberIds(aliceWs)).not.toContain(p.id(dave));

        const accepted = await p.rest(dave, "POST", `/v1/invitations/${invitation.id}/accept`);
        expect(accepted.status).toBe(200);
        expect(await memberIds(aliceWs)).toContain(p.id(dave));
        expect((await p.rest(dave, "GET", `/v1/workspaces/${aliceWs}`)).status).toBe(200);
        const client = await p.mcpClient(dave, aliceWs, era);
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain("files__write");
      },
    );

    it("a person invited by principal id can reach the workspace once they accept", async () => {
      expect((await p.rest("carol", "GET", "/v1/workspaces")).status).toBe(200);
      await addMember("alice", aliceWs, "carol", "member");
      const tools = await p.rest("carol", "GET", `/v1/workspaces/${aliceWs}/tools`);
      expect(tools.status).toBe(200);
    });

    overMcp("a removed member's next call is refused, over MCP and REST (MCP %s)", async (era) => {
      await p.signIn("bob");
      const bobId = p.id("bob");
      await addMember("alice", aliceWs, "bob");
      // Signed in, this client holds bob's token for this workspace; the same token is refused below.
      const client = await p.mcpClient("bob", aliceWs, era);
      await client.listTools();
      expect((await p.rest("bob", "GET", `/v1/workspaces/${aliceWs}/files`)).status).toBe(200);

      expect((await p.rest("alice", "DELETE", `/v1/workspaces/${aliceWs}/members/${bobId}`)).status).toBe(
        204,
      );

      // Signed in, bob's token itself ends with his membership (its grant is revoked): 401.
      const refused = mode === "header" ? 404 : 401;
      await expect(client.listTools()).rejects.toMatchObject({ name: "SdkHttpError", status: refused });
      await expect(client.callTool({ name: "files__list", arguments: {} })).rejects.toMatchObject({
        name: "SdkHttpError",
        status: refused,
      });
      expect((await p.rest("bob", "GET", `/v1/workspaces/${aliceWs}/files`)).status).toBe(404);
      expect((await p.rest("bob", "GET", `/v1/workspaces/${aliceWs}/tools`)).status).toBe(404);
    });

    it("a member who is not an admin cannot rename, delete or manage members", async () => {
      await p.signIn("bob");
      await p.signIn("carol");
      const [aliceId, bobId, carolId] = [p.id("alice"), p.id("bob"), p.id("carol")];
      await addMember("alice", aliceWs, "bob");

      const attempts: Array<[string, string, Record<string, unknown> | undefined]> = [
        ["PATCH", `/v1/workspaces/${aliceWs}`, { name: "Bob's now" }],
        ["DELETE", `/v1/workspaces/${aliceWs}`, undefined],
        ["POST", `/v1/workspaces/${aliceWs}/members`, { principalId: carolId }],
        ["POST", `/v1/workspaces/${aliceWs}/invitations`, { principalId: carolId }],
        ["GET", `/v1/workspaces/${aliceWs}/invitations`, undefined],
        ["PATCH", `/v1/workspaces/${aliceWs}/members/${bobId}`, { role: "admin" }],
        ["PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, { role: "member" }],
        ["DELETE", `/v1/workspaces/${aliceWs}/members/${aliceId}`, undefined],
      ];
      for (const [method, path, body] of attempts) {
        const response = await p.rest("bob", method, path, body);
        expect(response.status, `${method} ${path}`).toBe(403);
      }
      // Neither refused invitation reached carol.
      const carols = (await (await p.rest("carol", "GET", "/v1/invitations")).json()) as {
        invitations: unknown[];
      };
      expect(carols.invitations).toEqual([]);

      const ws = (await (await p.rest("alice", "GET", `/v1/workspaces/${aliceWs}`)).json()) as {
        name: string;
      };
      expect(ws.name).toBe("alice's workspace");
      const members = (await (await p.rest("alice", "GET", `/v1/workspaces/${aliceWs}/members`)).json()) as {
        members: Array<{ principalId: string; role: string }>;
      };
      expect(members.members.map((m) => [m.principalId, m.role]).sort()).toEqual(
        [
          [aliceId, "admin"],
          [bobId, "member"],
        ].sort(),
      );
    });

    it("the last admin can be neither removed nor demoted", async () => {
      const aliceId = p.id("alice");
      const removed = await p.rest("alice", "DELETE", `/v1/workspaces/${aliceWs}/members/${aliceId}`);
      expect(removed.status).toBe(409);
      expect(((await removed.json()) as { error: { code: string } }).error.code).toBe("last_admin");
      const demoted = await p.rest("alice", "PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, {
        role: "member",
      });
      expect(demoted.status).toBe(409);
      expect(await memberIds(aliceWs)).toEqual([aliceId]);
      expect(p.atrium.workspaces.roleOf(aliceWs, aliceId)).toBe("admin");

      // With a second admin, the first may step down: the 409 was about the last one only.
      await p.signIn("bob");
      await addMember("alice", aliceWs, "bob", "admin");
      const stepDown = await p.rest("alice", "PATCH", `/v1/workspaces/${aliceWs}/members/${aliceId}`, {
        role: "member",
      });
      expect(stepDown.status).toBe(200);
    });

    overMcp(
      "a file in a workspace its owner has left is not reachable by its bare id (MCP %s)",
      async (era) => {
        const { writeFile } = mcpIn(era);
        await p.signIn("bob");
        const bobId = p.id("bob");
        await addMember("alice", aliceWs, "bob");
        const fileId = await writeFile("bob", aliceWs, "bob-in-alice.txt", "bob's words");
        expect((await p.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(200);

        expect((await p.rest("bob", "DELETE", `/v1/workspaces/${aliceWs}/members/${bobId}`)).status).toBe(
          204,
        );

        expect((await p.rest("bob", "GET", `/v1/files/${fileId}`)).status).toBe(404);
        expect((await p.rest("bob", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
        expect((await p.rest("bob", "DELETE", `/v1/files/${fileId}`)).status).toBe(404);
      },
    );

    overMcp(
      "a file in an archived workspace is not reachable by its bare id, even by its owner (MCP %s)",
      async (era) => {
        const { callTool, writeFile } = mcpIn(era);
        const ws = await newWorkspace("alice", "Short-lived");
        const fileId = await writeFile("alice", ws, "left-behind.txt", "old");
        expect((await p.rest("alice", "GET", `/v1/files/${fileId}`)).status).toBe(200);

        expect((await p.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);

        expect((await p.rest("alice", "GET", `/v1/files/${fileId}`)).status).toBe(404);
        expect((await p.rest("alice", "GET", `/v1/files/${fileId}/meta`)).status).toBe(404);
        // The same credential that wrote the file: signed in, alice's token for the archived URL,
        // whose grant the archive ended (401); with a header, the gate's 404.
        expect((await callTool("alice", ws, "files__read", { id: fileId })).status).toBe(
          mode === "header" ? 404 : 401,
        );
      },
    );

    overMcp("a client cannot choose whom it acts as through _meta (MCP %s)", async (era) => {
      const { post, toolResult } = mcpIn(era);
      const bobWs = await newWorkspace("bob");
      const forged = { "dev.atrium/caller": { principalId: p.id("bob"), workspaceId: bobWs } };
      const response = await post("alice", aliceWs, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "forged.txt", text: "x" }, _meta: forged },
      });
      const result = ((await readMcpMessage(response)) as { result: CallToolResult }).result;
      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ ownerId: p.id("alice"), workspaceId: aliceWs });
      const bobFiles = await toolResult("bob", bobWs, "files__list", {});
      expect((bobFiles.structuredContent as { files: unknown[] }).files).toEqual([]);
    });

    overMcp("files are private to their owner within a shared workspace (MCP %s)", async (era) => {
      const { toolResult, writeFile } = mcpIn(era);
      await p.signIn("bob");
      await addMember("alice", aliceWs, "bob");
      const aliceFile = await writeFile("alice", aliceWs, "alice-only.txt", "mine");
      const bobFile = await writeFile("bob", aliceWs, "bob-only.txt", "his");

      const bobList = await toolResult("bob", aliceWs, "files__list", {});
      const bobIds = (bobList.structuredContent as { files: Array<{ id: string }> }).files.map((f) => f.id);
      expect(bobIds).toEqual([bobFile]);
      expect(await fileIds("bob", aliceWs)).toEqual([bobFile]);

      expect((await toolResult("bob", aliceWs, "files__read", { id: aliceFile })).isError).toBe(true);
      expect((await toolResult("bob", aliceWs, "files__delete", { id: aliceFile })).isError).toBe(true);
      expect((await p.rest("bob", "GET", `/v1/files/${aliceFile}`)).status).toBe(404);

      const aliceRead = await toolResult("alice", aliceWs, "files__read", { id: aliceFile });
      expect((aliceRead.structuredContent as { content: string }).content).toBe("mine");
    });
  });

  describe("identity", () => {
    overMcp("a request that says nothing about who sends it is refused with 401 (MCP %s)", async (era) => {
      expect((await p.rest(null, "GET", "/v1/workspaces")).status).toBe(401);
      expect((await mcpIn(era).post(null, aliceWs, listTools)).status).toBe(401);
    });

    overMcp("a browser session opens REST but is never a credential at /mcp (MCP %s)", async (era) => {
      const cookie = await p.sessionCookie("alice");
      const rest = await p.rest(null, "GET", `/v1/workspaces/${aliceWs}`, undefined, { cookie });
      expect(rest.status).toBe(200);
      const { headers, body } = mcpRequest(era, listTools);
      const mcp = await p.rest(null, "POST", `/mcp/${aliceWs}`, body, { ...headers, cookie });
      expect(mcp.status).toBe(401);
    });
  });
}
