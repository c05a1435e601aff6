import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";
import {
  authorizeByHand,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// A refresh's photograph of an OAuth connection whose access token has expired first waits for
// the token to be refreshed. A disable or remove ends that wait as it ends the photograph, and
// the refresh answers at once (adr/0122), while the authorization server still holds the token
// request: the request itself goes on, and its answer is sealed — or, for a removed connection,
// is not, since its credential is gone (adr/0122, amended).

let scripted: ScriptedOAuthServer;

beforeAll(async () => {
  scripted = await startScriptedOAuthServer();
});

afterEach(() => {
  scripted.token = undefined;
  scripted.expiresIn = 3600;
});

afterAll(async () => {
  await scripted?.close();
});

async function sealedCredentials(instance: TestAtrium): Promise<string[]> {
  const files = await readdir(join(instance.root, "_instance", "credentials")).catch(() => []);
  return files.filter((name) => name.startsWith("cred_"));
}

describe("a disable or remove while a refresh's photograph waits on its token refresh", () => {
  it.each([
    ["disable", 409, "refresh_interrupted"],
    ["remove", 404, "connection_not_found"],
  ] as const)(
    "%s: the refresh answers %i before the authorization server lets go of the token request",
    async (what, status, code) => {
      const time = new FakeTime(Date.now());
      const captured = capturingLogger();
      let instance = await startConnectionsAtrium(
        "atrium-connections-oauth-token-wait-",
        time,
        captured.log,
        { requestTimeoutSeconds: 300, healthIntervalSeconds: 3600, credentialCheckIntervalSeconds: 3600 },
      );
      scripted.expiresIn = 60;
      const [held, release] = [gate(), gate()];
      try {
        const workspaceId = await bootstrapWorkspace(instance, "alice");
        const added = await instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/connections`, {
          name: "held",
          url: scripted.url,
          auth: { kind: "oauth", scopes: ["read"] },
        });
        const { go_url } = (await added.json()) as { go_url: string };
        expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
        const sealedBefore = await sealedCredentials(instance);
        expect(sealedBefore).toHaveLength(1);
        time.jump(120_000);
        // A rotating server: each refresh token is good once, spent as the request arrives.
        const spent = new Set<string>();
        scripted.token = async (form) => {
          if (form.get("grant_type") !== "refresh_token") return scripted.honestToken(form);
          const given = form.get("refresh_token") ?? "";
          if (spent.has(given)) return Response.json({ error: "invalid_grant" }, { status: 400 });
          spent.add(given);
          held.open();
          await release.promise;
          return scripted.honestToken(form);
        };
        const refreshing = instance.rest(
          "alice",
          "POST",
          `/v1/workspaces/${workspaceId}/connections/held/tools/refresh`,
        );
        await held.promise;
        const ended =
          what === "disable"
            ? await instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/connections/held/disable`)
            : await instance.rest("alice", "DELETE", `/v1/workspaces/${workspaceId}/connections/held`);
        expect(ended.status).toBe(what === "disable" ? 200 : 204);
        // Answered while the server still holds the token request (let go only below).
        const refreshed = await refreshing;
        expect({ status: refreshed.status, body: await refreshed.json() }).toMatchObject({
          status,
          body: { error: { code } },
        });
        release.open();
        // The restart's stop waits for the token refresh under way to end.
        instance = await instance.restart();
        if (what === "remove") {
          // The answer found its credential deleted: nothing is sealed for a connection that is gone.
          expect(await sealedCredentials(instance)).toEqual([]);
          // A normal end of a refresh whose connection went, told at info (30), not as an error.
          expect(captured.lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
          expect(captured.lines).toContainEqual(
            expect.objectContaining({
              level: 30,
              connection: "held",
              msg: expect.stringContaining("refreshed tokens not sealed"),
            }),
          );
          return;
        }
        // The rotated refresh token was sealed: enabled again, the connection refreshes with it
        // (the spent one would be refused, invalid_grant).
        const enabled = await instance.rest(
          "alice",
          "POST",
          `/v1/workspaces/${workspaceId}/connections/held/enable`,
        );
        expect(enabled.status).toBe(200);
        time.jump(120_000);
        const called = await instance.rest("alice", "POST", `/v1/workspaces/${workspaceId}/tools/call`, {
          name: "held__echo",
          arguments: { text: "hi" },
        });
        expect(await called.json()).toMatchObject({ content: [{ text: "hi" }] });
      } finally {
        release.open();
        await instance.stop();
      }
    },
  );
});
