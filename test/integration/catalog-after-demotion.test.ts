import { expect, it } from "vitest";
import { testPrincipal } from "../helpers/atrium.ts";
import { ADMIN, heldCallsAtrium } from "../helpers/held-calls-atrium.ts";
import { holdingFsCall } from "../helpers/held-fs-call.ts";
import { addMember } from "../helpers/members.ts";

// A workspace's catalog lists the servers every member may be connected to, so only an admin adds
// an entry, and the role is asked when the write acts (ADR 0154, amended): again just before the
// entry's file is linked into place. An admin demoted while their add is held (at the temp file's
// open, as a slow disk or a queue behind the catalog's lock would hold it) adds nothing, and is
// answered 403.

const { instance, team } = heldCallsAtrium();
const BOB = "bob-demoted";
const isTempEntry = (path: string) => /\/\.tmp-com\.example~crm\.json-[0-9a-f]+$/.test(path);
const crm = {
  name: "com.example/crm",
  description: "The CRM",
  version: "1.0.0",
  remotes: [{ type: "streamable-http", url: "https://crm.example.com/mcp" }],
};

it("a catalog entry added by an admin demoted mid-write is not there, and the add answers 403", async () => {
  const ws = await team();
  const bob = testPrincipal(BOB).id;
  await addMember(instance().rest, ADMIN, ws, BOB, { principalId: bob }, "admin");
  let status = 0;
  await holdingFsCall("open", isTempEntry, async (write) => {
    const answer = instance().rest(BOB, "POST", `/v1/workspaces/${ws}/catalog`, crm);
    await write.reached;
    const demoted = await instance().rest(ADMIN, "PATCH", `/v1/workspaces/${ws}/members/${bob}`, {
      role: "member",
    });
    expect(demoted.status).toBe(200);
    write.release();
    status = (await answer).status;
  });
  expect(status).toBe(403);
  const listed = await instance().rest(ADMIN, "GET", `/v1/workspaces/${ws}/catalog`);
  expect(((await listed.json()) as { servers: unknown[] }).servers).toEqual([]);
});
