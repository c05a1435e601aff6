import { afterEach, beforeEach, expect, it } from "vitest";
import { Forbidden } from "../../../../src/errors.ts";
import { Catalog } from "../../../../src/platform/connections/catalog.ts";
import { NO_CALLER, withRoleRequired } from "../../../../src/workspace/access-check.ts";
import { notAdmin } from "../../../../src/workspace/gate.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { holdingFsCall } from "../../../helpers/held-fs-call.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A workspace catalog entry's remove takes an admin, and the role is asked again under the
// catalog's lock, just before the entry's file is unlinked (ADR 0154, amended): an admin demoted
// while their remove waited behind another admin's add (held at the open of its temp file, as a
// slow disk would hold it) removes nothing.

const ADMIN = `usr_${"a".repeat(24)}`;
const OTHER_ADMIN = `usr_${"b".repeat(24)}`;

function server(name: string) {
  return {
    name,
    description: `The ${name} server`,
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: `https://${name.split("/")[1]}.example.com/mcp` }],
  };
}

let temp: TempRoot;
let catalog: Catalog;

beforeEach(async () => {
  temp = await openTempRoot("catalog-demoted", ADMIN);
  await temp.workspaces.addMember(temp.ws, OTHER_ADMIN, "admin");
  const storage = temp.layout.partition("connections");
  catalog = new Catalog({ dir: undefined, storage, clock: new FakeTime().clock, log: memoryLog().log });
  await catalog.add(temp.ws, ADMIN, server("com.example/crm"), NO_CALLER);
});

afterEach(() => temp.remove());

it("a remove by an admin demoted while it waited is refused, and the entry stays", async () => {
  const isHeldAdd = (path: string) => /\/\.tmp-com\.example~mail\.json-[0-9a-f]+$/.test(path);
  const refused = await holdingFsCall("open", isHeldAdd, async (write) => {
    const adding = catalog.add(temp.ws, OTHER_ADMIN, server("com.example/mail"), NO_CALLER);
    await write.reached;
    // Asked for while ADMIN is an admin, and queued behind the add on the catalog's lock.
    const stillAdmin = withRoleRequired(NO_CALLER, temp.workspaces, ADMIN, temp.ws, "admin", notAdmin);
    const removing = catalog.remove(temp.ws, "com.example~crm", stillAdmin).then(
      () => undefined,
      (error: unknown) => error,
    );
    await temp.workspaces.setRole(temp.ws, ADMIN, "member", OTHER_ADMIN);
    write.release();
    await adding;
    return removing;
  });
  expect(refused).toBeInstanceOf(Forbidden);
  expect((await catalog.list(temp.ws)).map((entry) => entry.id).sort()).toEqual([
    "com.example~crm",
    "com.example~mail",
  ]);
});
