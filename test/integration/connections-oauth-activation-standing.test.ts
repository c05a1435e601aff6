import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import { gate } from "../helpers/gate.ts";
import { addMember } from "../helpers/members.ts";
import {
  deliverByHand,
  openGoUrl,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// An OAuth connection's activation asks, at its commit, whether the person who opened its sign-in
// still has the standing opening it required (adr/0154, amended): an admin for a workspace
// connection, a member for their own personal one. The callback already asked before it redeemed
// the code; the authorization server here holds that redemption while the test changes who the
// opener is, so the change lands between that check and the activation's write.

let scripted: ScriptedOAuthServer;
let instance: TestAtrium;
let ws: string;
const carol = testPrincipal("carol").id;
const bob = testPrincipal("bob").id;

beforeAll(async () => {
  scripted = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium(
    "atrium-connections-oauth-standing-",
    new FakeTime(Date.now()),
    capturingLogger().log,
    { healthIntervalSeconds: 3600, credentialCheckIntervalSeconds: 3600 },
  );
  ws = await bootstrapWorkspace(instance, "alice");
});

afterEach(() => {
  scripted.token = undefined;
});

afterAll(async () => {
  await instance?.stop();
  await scripted?.close();
  if (instance) await rm(instance.dir, { recursive: true, force: true });
});

/** The sealed credentials on disk; none yet before the first is sealed. */
async function sealed(): Promise<string[]> {
  const names = await readdir(join(instance.root, "_instance", "credentials")).catch(() => []);
  return names.sort();
}

/**
 * Signs in at `goUrl` as `user` and delivers the answer to Atrium's callback, the code's
 * redemption held at the authorization server while `meanwhile` runs: Atrium's answer, whether
 * it cleared the flow's binding cookie, and a replay of the same callback's.
 */
async function authorizeWhile(
  user: string,
  goUrl: string,
  meanwhile: () => Promise<void>,
): Promise<{ status: number; text: string; cleared: boolean; replay: number }> {
  const [held, release] = [gate(), gate()];
  scripted.token = async (form) => {
    if (form.get("grant_type") === "authorization_code") {
      held.open();
      await release.promise;
    }
    return scripted.honestToken(form);
  };
  const { location, cookie } = await openGoUrl(instance, user, goUrl);
  const atServer = await fetch(location, { redirect: "manual" });
  const back = new URL(String(atServer.headers.get("location")));
  const landing = deliverByHand(instance, user, cookie, back);
  await held.promise;
  try {
    await meanwhile();
  } finally {
    release.open();
  }
  const { status, text, headers } = await landing;
  // The flow is spent, so its binding cookie goes with the answer, as after any spent callback.
  const cleared = String(headers["set-cookie"] ?? "").includes("Max-Age=0");
  return { status, text, cleared, replay: (await deliverByHand(instance, user, cookie, back)).status };
}

async function add(user: string, name: string, personal = false): Promise<string> {
  const added = await instance.rest(user, "POST", `/v1/workspaces/${ws}/connections`, {
    name,
    url: scripted.url,
    auth: { kind: "oauth", scopes: ["read"] },
    ...(personal ? { personal: true } : {}),
  });
  expect(added.status).toBe(201);
  return ((await added.json()) as { go_url: string }).go_url;
}

async function stateOf(user: string, name: string): Promise<string> {
  const viewed = await instance.rest(user, "GET", `/v1/workspaces/${ws}/connections/${name}`);
  expect(viewed.status).toBe(200);
  return ((await viewed.json()) as { state: string }).state;
}

describe("an OAuth connection's activation asks its opener's standing at its commit", () => {
  it("an admin demoted while the code is redeemed activates nothing: 403 says why, the flow is spent", async () => {
    await addMember(instance.rest, "alice", ws, "carol", { principalId: carol }, "admin");
    const goUrl = await add("carol", "demoted");
    const before = await sealed();
    const answered = await authorizeWhile("carol", goUrl, async () => {
      const demoted = await instance.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${carol}`, {
        role: "member",
      });
      expect(demoted.status).toBe(200);
    });
    expect(answered.status).toBe(403);
    expect(answered.text).toContain("You are no longer an admin of this workspace");
    expect(answered.text).toContain("Ask one of its admins to authorize it");
    expect(answered.cleared).toBe(true);
    expect(answered.replay).toBe(400);
    expect(await stateOf("alice", "demoted")).toBe("pending_auth");
    // The tokens sealed for the activation went with it.
    expect(await sealed()).toEqual(before);
  });

  it("a member removed while the code is redeemed activates nothing of their personal connection", async () => {
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    const goUrl = await add("bob", "notes", true);
    const before = await sealed();
    const answered = await authorizeWhile("bob", goUrl, async () => {
      expect((await instance.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bob}`)).status).toBe(
        204,
      );
    });
    expect(answered.status).toBe(403);
    expect(answered.text).toContain("You are no longer a member of this workspace");
    expect(answered.text).toContain("add you again, then sign in again");
    expect(answered.cleared).toBe(true);
    expect(answered.replay).toBe(400);
    expect(await sealed()).toEqual(before);
    await addMember(instance.rest, "alice", ws, "bob", { principalId: bob });
    expect(await stateOf("bob", "my_notes")).toBe("pending_auth");
  });

  it("an admin deactivated while the code is redeemed activates nothing, and is told so", async () => {
    const dave = testPrincipal("dave").id;
    await addMember(instance.rest, "alice", ws, "dave", { principalId: dave }, "admin");
    const goUrl = await add("dave", "deactivated");
    const answered = await authorizeWhile("dave", goUrl, async () => {
      expect((await instance.rest("orgadmin-olga", "POST", `/v1/users/${dave}/deactivate`)).status).toBe(200);
    });
    expect(answered.status).toBe(403);
    expect(answered.text).toContain("Your account was deactivated by an org admin");
    expect(await stateOf("alice", "deactivated")).toBe("pending_auth");
  });

  it("an opener whose standing did not change activates it", async () => {
    const goUrl = await add("alice", "steady");
    const answered = await authorizeWhile("alice", goUrl, async () => undefined);
    expect(answered.status).toBe(200);
    expect(await stateOf("alice", "steady")).toBe("running");
  });
});
