import { afterAll, beforeAll, expect } from "vitest";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { startTestAtrium, type TestAtrium, testPrincipal } from "./atrium.ts";
import { type ToolWork, watchToolWork } from "./call-through.ts";
import { HeldCalls } from "./held-calls.ts";
import { addMember } from "./members.ts";

/** The org admin who makes the workspaces of the access-ends tests and changes them. */
export const ADMIN = "orgadmin-alice";

/**
 * The access-ends tests' scene (ADR 0154): one Atrium with the platform apps and the held calls,
 * started before a file's tests and stopped after them, every held call let go first, its tool
 * calls watched (`tools`); `team` makes a new workspace of ADMIN's with `members` in it, and
 * `newPerson` names someone no earlier test of the file has met (a deactivation is for good).
 * Call once, at a file's top level.
 */
export function heldCallsAtrium(): {
  held: HeldCalls;
  instance: () => TestAtrium;
  tools: () => ToolWork;
  team: (...members: string[]) => Promise<string>;
  newPerson: (name: string) => string;
} {
  const held = new HeldCalls();
  let started: { atrium: TestAtrium; tools: ToolWork } | undefined;
  beforeAll(async () => {
    const atrium = await startTestAtrium({ apps: [...PLATFORM_APPS, held.app] });
    started = { atrium, tools: watchToolWork(atrium) };
  });
  afterAll(async () => {
    held.releaseAll();
    started?.tools.stop();
    await started?.atrium.stop();
  });
  const scene = () => {
    if (!started)
      throw new Error("the held-calls Atrium has not started (call heldCallsAtrium at a file's top level)");
    return started;
  };
  const instance = () => scene().atrium;
  let people = 0;
  const newPerson = (name: string) => {
    people++;
    return `${name}${people}`;
  };
  const team = async (...members: string[]) => {
    const created = await instance().rest(ADMIN, "POST", "/v1/workspaces", { name: "team" });
    const ws = ((await created.json()) as { id: string }).id;
    for (const member of members) {
      await addMember(instance().rest, ADMIN, ws, member, { principalId: testPrincipal(member).id });
    }
    return ws;
  };
  return { held, instance, tools: () => scene().tools, team, newPerson };
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

/** What the gate answers someone after `change` ended their access. */
export function gateRefusal(change: AccessEnding): { status: number; code: string } {
  return change === "deactivation"
    ? { status: 403, code: "forbidden" }
    : { status: 404, code: "workspace_not_found" };
}
