import { afterAll, beforeAll, expect } from "vitest";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { startTestAtrium, type TestAtrium, testPrincipal } from "./atrium.ts";
import { HeldCalls } from "./held-calls.ts";
import { addMember } from "./members.ts";

/** The org admin who makes the workspaces of the access-ends tests and changes them. */
export const ADMIN = "orgadmin-alice";

/**
 * The access-ends tests' scene (ADR 0154): one Atrium with the platform apps and the held calls,
 * started before a file's tests and stopped after them, every held call let go first; `team` makes
 * a new workspace of ADMIN's with `members` in it. Call once, at a file's top level.
 */
export function heldCallsAtrium(): {
  held: HeldCalls;
  instance: () => TestAtrium;
  team: (...members: string[]) => Promise<string>;
} {
  const held = new HeldCalls();
  let started: TestAtrium | undefined;
  beforeAll(async () => {
    started = await startTestAtrium({ apps: [...PLATFORM_APPS, held.app] });
  });
  afterAll(async () => {
    held.releaseAll();
    await started?.stop();
  });
  const instance = () => {
    if (!started)
      throw new Error("the held-calls Atrium has not started (call heldCallsAtrium at a file's top level)");
    return started;
  };
  const team = async (...members: string[]) => {
    const created = await instance().rest(ADMIN, "POST", "/v1/workspaces", { name: "team" });
    const ws = ((await created.json()) as { id: string }).id;
    for (const member of members) {
      await addMember(instance().rest, ADMIN, ws, member, { principalId: testPrincipal(member).id });
    }
    return ws;
  };
  return { held, instance, team };
}

/** The changes that end a person's access to a workspace (ADR 0154). */
export const ACCESS_ENDINGS = ["archive", "removal", "deactivation"] as const;
export type AccessEnding = (typeof ACCESS_ENDINGS)[number];

/** ADMIN ends `member`'s access to `ws` by `change`: the workspace archived, them removed, or deactivated. */
export async function endAccess(
  instance: TestAtrium,
  change: AccessEnding,
  ws: string,
  member: string,
): Promise<void> {
  const id = testPrincipal(member).id;
  const changed =
    change === "archive"
      ? await instance.rest(ADMIN, "DELETE", `/v1/workspaces/${ws}`)
      : change === "removal"
        ? await instance.rest(ADMIN, "DELETE", `/v1/workspaces/${ws}/members/${id}`)
        : await instance.rest(ADMIN, "POST", `/v1/users/${id}/deactivate`);
  expect(changed.status, `${change} of ${member} in ${ws}`).toBeLessThan(300);
}
