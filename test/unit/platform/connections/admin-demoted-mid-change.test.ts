import { afterEach, beforeEach, expect, it } from "vitest";
import { Forbidden } from "../../../../src/errors.ts";
import { Connections } from "../../../../src/platform/connections/connections.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES, photograph } from "../../../../src/platform/connections/snapshot.ts";
import { ConnectionStore } from "../../../../src/platform/connections/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { inertConnectionsDeps } from "../../../helpers/connections-deps.ts";
import { holdingFsCall } from "../../../helpers/held-fs-call.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A workspace connection's disable or remove takes an admin, and the role is asked again under the
// connection's lock, just before the rename that makes the change seen (ADR 0154, amended): an
// admin demoted while their change waited behind another write of the connection (held at the
// open of its record's temp file, as a slow disk would hold it) changes nothing.

const ADMIN = `usr_${"a".repeat(24)}`;
const OTHER_ADMIN = `usr_${"b".repeat(24)}`;
const isTempRecord = (path: string) => /\/srv\/\.tmp-connection\.json-[0-9a-f]+$/.test(path);

let temp: TempRoot;
let store: ConnectionStore;
let connections: Connections;

beforeEach(async () => {
  temp = await openTempRoot("connections-demoted", ADMIN);
  await temp.workspaces.addMember(temp.ws, OTHER_ADMIN, "admin");
  store = new ConnectionStore(temp.layout.partition("connections"));
  const taken = photograph(
    [],
    {
      version: 1,
      takenAt: "2026-12-07T00:00:00.000Z",
      generation: 1,
      protocolVersion: "2026-07-28",
    },
    DEFAULT_MAX_SNAPSHOT_BYTES,
    "remote",
  );
  if (!("snapshot" in taken)) throw new Error("refused");
  await store.create(connectionRecord(temp.ws), taken.snapshot, NO_CALLER);
  connections = new Connections(inertConnectionsDeps(store, { workspaces: temp.workspaces }));
});

afterEach(() => temp.remove());

/** `change` starts behind a write of the record held at its temp file; ADMIN is demoted before it goes on. */
async function demotedWhileQueued(change: () => Promise<unknown>): Promise<unknown> {
  return holdingFsCall("open", isTempRecord, async (write) => {
    const before = store.update(temp.ws, "srv", (current) => current, undefined, NO_CALLER);
    await write.reached;
    // Its first check passes now: ADMIN is an admin when the change is asked for.
    const changing = change().then(
      () => undefined,
      (error: unknown) => error,
    );
    await temp.workspaces.setRole(temp.ws, ADMIN, "member", OTHER_ADMIN);
    write.release();
    await before;
    return changing;
  });
}

it("a disable by an admin demoted while it waited is refused, and the connection stays enabled", async () => {
  const refused = await demotedWhileQueued(() => connections.setDisabled(temp.ws, ADMIN, "srv", true));
  expect(refused).toBeInstanceOf(Forbidden);
  expect((await store.get(temp.ws, "srv")).disabled).toBe(false);
});

it("a remove by an admin demoted while it waited is refused, and the connection stays", async () => {
  const refused = await demotedWhileQueued(() => connections.remove(temp.ws, ADMIN, "srv"));
  expect(refused).toBeInstanceOf(Forbidden);
  expect(store.names(temp.ws)).toEqual(["srv"]);
});
