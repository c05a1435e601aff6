import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { type Gate, gate } from "../helpers/gate.ts";
import { addMember } from "../helpers/members.ts";

// A write to a workspace is admitted by the gate (and again once its body has come, ADR 0129),
// then waits for the workspace store's lock and writes. An admin demoted or removed while it
// waited must be refused as if the write came after: the store asks the actor's standing again
// under its lock, of the workspace it is about to write (ADR 0129, amended).

let t: TestAtrium;
const bob = testPrincipal("bob").id;
const carol = testPrincipal("carol").id;
const alice = testPrincipal("alice").id;

beforeAll(async () => {
  t = await startTestAtrium();
});

afterAll(async () => {
  await t?.stop();
});

type HeldWrite = "rename" | "archive" | "setRole" | "removeMember";

/**
 * Holds the next call of the store's `method` before it takes the workspace's lock (past every
 * check the route makes), until `release` opens: what a lock wait behind another write does.
 */
function holdNext(method: HeldWrite): { held: Gate; release: Gate } {
  // Replaced on the instance the routes hold, as invitations.test.ts replaces addMember.
  const store = t.atrium.workspaces as unknown as Record<HeldWrite, (...args: unknown[]) => Promise<unknown>>;
  const real = store[method];
  const held = gate();
  const release = gate();
  store[method] = async (...args: unknown[]) => {
    store[method] = real;
    held.open();
    await release.promise;
    return real.apply(store, args);
  };
  return { held, release };
}

/** alice's workspace with bob as admin and carol as member. */
async function team(name: string): Promise<string> {
  const created = await t.rest("alice", "POST", "/v1/workspaces", { name });
  const ws = ((await created.json()) as { id: string }).id;
  await addMember(t.rest.bind(t), "alice", ws, "bob", { principalId: bob }, "admin");
  await addMember(t.rest.bind(t), "alice", ws, "carol", { principalId: carol }, "member");
  return ws;
}

async function answer(response: Response): Promise<{ status: number; body: string }> {
  return { status: response.status, body: await response.text() };
}

/**
 * `write` is sent and held at the store; `meanwhile` lands; the held write is then refused with
 * what the same write sent now is answered.
 */
async function heldThrough(
  method: HeldWrite,
  write: () => Promise<Response>,
  meanwhile: () => Promise<Response>,
): Promise<{ held: { status: number; body: string }; after: { status: number; body: string } }> {
  const { held, release } = holdNext(method);
  try {
    const sent = write();
    await held.promise;
    expect((await meanwhile()).status).toBeLessThan(300);
    release.open();
    return { held: await answer(await sent), after: await answer(await write()) };
  } finally {
    release.open();
  }
}

async function roles(ws: string, user = "alice"): Promise<Record<string, string>> {
  const listed = (await (await t.rest(user, "GET", `/v1/workspaces/${ws}/members`)).json()) as {
    members: Array<{ principalId: string; role: string }>;
  };
  return Object.fromEntries(listed.members.map((m) => [m.principalId, m.role]));
}

const demoteBob = (ws: string) => () =>
  t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${bob}`, { role: "member" });
const removeBob = (ws: string) => () => t.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bob}`);

describe("a store write whose actor lost their standing while it waited for the lock", () => {
  it("a rename by an admin demoted meanwhile is 403, as after, and the name stays", async () => {
    const ws = await team("kept name");
    const { held, after } = await heldThrough(
      "rename",
      () => t.rest("bob", "PATCH", `/v1/workspaces/${ws}`, { name: "bob's now" }),
      demoteBob(ws),
    );
    expect(held.status).toBe(403);
    expect(held).toEqual(after);
    const workspace = (await (await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).json()) as {
      name: string;
    };
    expect(workspace.name).toBe("kept name");
  });

  it("a promotion by an admin removed meanwhile is 404, as after, and promotes nobody", async () => {
    const ws = await team("no promotion");
    const { held, after } = await heldThrough(
      "setRole",
      () => t.rest("bob", "PATCH", `/v1/workspaces/${ws}/members/${carol}`, { role: "admin" }),
      removeBob(ws),
    );
    expect(held.status).toBe(404);
    expect(held).toEqual(after);
    expect((await roles(ws))[carol]).toBe("member");
  });

  it("a removal by an admin demoted meanwhile is 403, as after, and removes nobody", async () => {
    const ws = await team("no removal");
    const { held, after } = await heldThrough(
      "removeMember",
      () => t.rest("bob", "DELETE", `/v1/workspaces/${ws}/members/${carol}`),
      demoteBob(ws),
    );
    expect(held.status).toBe(403);
    expect(held).toEqual(after);
    expect((await roles(ws))[carol]).toBe("member");
  });

  it("an archive by an admin demoted meanwhile is 403, as after, and the workspace stays", async () => {
    const ws = await team("not archived");
    const { held, after } = await heldThrough(
      "archive",
      () => t.rest("bob", "DELETE", `/v1/workspaces/${ws}`),
      demoteBob(ws),
    );
    expect(held.status).toBe(403);
    expect(held).toEqual(after);
    expect((await t.rest("alice", "GET", `/v1/workspaces/${ws}`)).status).toBe(200);
  });

  it("two admins demoting each other: the second, demoted by the first, is 403, not last_admin", async () => {
    const ws = await team("mutual");
    const { held, after } = await heldThrough(
      "setRole",
      () => t.rest("alice", "PATCH", `/v1/workspaces/${ws}/members/${bob}`, { role: "member" }),
      () => t.rest("bob", "PATCH", `/v1/workspaces/${ws}/members/${alice}`, { role: "member" }),
    );
    expect(held.status).toBe(403);
    expect(held).toEqual(after);
    expect(await roles(ws, "bob")).toMatchObject({ [alice]: "member", [bob]: "admin" });
  });
});
