import { expect, it } from "vitest";
import { testPrincipal } from "../helpers/atrium.ts";
import { ADMIN, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";
import { addMember } from "../helpers/members.ts";

// A connection grant lets a member's personal connection act in the workspace, so only an admin
// grants or revokes one, and the role is asked when the write acts (ADR 0154, amended): again just
// before the grants file's rename. An admin demoted while their grant or revoke is held (at the
// temp file's open, as a slow disk or a queue behind the workspace's grants lock would hold it)
// changes nothing, and is answered 403.

const { instance, team } = heldCallsAtrium();
const BOB = "bob-demoted";
const CAROL = "carol-member";
const carol = testPrincipal(CAROL).id;
const isTempGrantsFile = (path: string) => /\/\.tmp-grants\.json-[0-9a-f]+$/.test(path);

/** A workspace of ADMIN's with BOB as an admin and CAROL as a member. */
async function bobAdminIn(): Promise<string> {
  const ws = await team(CAROL);
  await addMember(instance().rest, ADMIN, ws, BOB, { principalId: testPrincipal(BOB).id }, "admin");
  return ws;
}

async function demoteBob(ws: string): Promise<void> {
  const id = testPrincipal(BOB).id;
  const demoted = await instance().rest(ADMIN, "PATCH", `/v1/workspaces/${ws}/members/${id}`, {
    role: "member",
  });
  expect(demoted.status).toBe(200);
}

async function grantsIn(ws: string): Promise<unknown[]> {
  const listed = await instance().rest(ADMIN, "GET", `/v1/workspaces/${ws}/connections/grants`);
  return ((await listed.json()) as { grants: unknown[] }).grants;
}

it("a grant made by an admin demoted mid-write is not there, and the grant answers 403", async () => {
  const ws = await bobAdminIn();
  let status = 0;
  await holdingFsCall("open", isTempGrantsFile, async (write) => {
    const body = { principalId: carol, connection: "my_notes" };
    const answer = instance().rest(BOB, "POST", `/v1/workspaces/${ws}/connections/grants`, body);
    await write.reached;
    await demoteBob(ws);
    write.release();
    status = (await answer).status;
  });
  expect(status).toBe(403);
  expect(await grantsIn(ws)).toEqual([]);
});

it("a grant revoked by an admin demoted mid-write is still there, and the revoke answers 403", async () => {
  const ws = await bobAdminIn();
  const grants = `/v1/workspaces/${ws}/connections/grants`;
  const made = await instance().rest(ADMIN, "POST", grants, { principalId: carol, connection: "my_notes" });
  expect(made.status).toBe(201);
  const before = await grantsIn(ws);
  expect(before).toHaveLength(1);
  let status = 0;
  await holdingFsCall("open", isTempGrantsFile, async (write) => {
    const answer = instance().rest(BOB, "DELETE", `${grants}/${carol}/my_notes`);
    await write.reached;
    await demoteBob(ws);
    write.release();
    status = (await answer).status;
  });
  expect(status).toBe(403);
  expect(await grantsIn(ws)).toEqual(before);
});
