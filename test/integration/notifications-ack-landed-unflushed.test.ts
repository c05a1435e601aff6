import { afterAll, beforeAll, expect, it } from "vitest";
import type { NotificationView } from "../../src/platform/notifications/model.ts";
import {
  bootstrapWorkspace,
  capturingLogger,
  startTestAtrium,
  type TestAtrium,
  testPrincipal,
} from "../helpers/atrium.ts";
import { eventually } from "../helpers/eventually.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { addMember } from "../helpers/members.ts";

// A member's ack whose acks file lands and whose folder's flush then meets ENOSPC is stored, so
// it is answered as done (ADR 0166): never 507 "nothing stored", nor the operator's storage-full
// warning, which a landed write's flush error used to reach through its copied code (ADR 0165).

let t: TestAtrium;
let ws: string;
const { log, lines } = capturingLogger();
beforeAll(async () => {
  t = await startTestAtrium({ log });
  ws = await bootstrapWorkspace(t, "alice");
});
afterAll(async () => {
  await t?.stop();
});

const enospc = () => Object.assign(new Error("ENOSPC: no space left on device, fsync"), { code: "ENOSPC" });

const unacked = async () => {
  const response = await t.rest("alice", "GET", `/v1/workspaces/${ws}/notifications?unacked=true`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { notifications: NotificationView[] }).notifications;
};

it("an ack that is stored is not answered 507 'nothing stored'", async () => {
  // Something in the inbox: an org admin deactivates a person (the runtime's producer).
  await addMember(t.rest, "alice", ws, "bob", { principalId: testPrincipal("bob").id });
  expect(
    (await t.rest("orgadmin-olga", "POST", `/v1/users/${testPrincipal("bob").id}/deactivate`)).status,
  ).toBe(200);
  await eventually(async () => expect((await unacked()).length).toBeGreaterThan(0));

  let status: number | undefined;
  await journalDuring(
    async () => {
      status = (await t.rest("alice", "POST", `/v1/workspaces/${ws}/notifications/ack`, { all: true }))
        .status;
    },
    { sync: (path) => (path.endsWith("/acks") ? enospc() : undefined) },
  );
  // The ack landed: nothing is unacknowledged any more, seen at once...
  expect(await unacked()).toEqual([]);
  const warned = lines.filter((line) => line.msg === "storage full: a write was refused and nothing stored");
  expect({ status, warned: warned.length }).toEqual({ status: 200, warned: 0 });
}, 60_000);
