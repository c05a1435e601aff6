import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../../src/identity/principal.ts";
import { FirstWorkspace, firstWorkspaceName } from "../../../src/workspace/first-workspace.ts";
import { MAX_WORKSPACE_NAME_CHARS } from "../../../src/workspace/model.ts";
import { openTempRoot, type TempRoot } from "../../helpers/temp-root.ts";
import { person } from "../oauth/fixtures.ts";

let temp: TempRoot;
beforeEach(async () => {
  temp = await openTempRoot("first", "someone-else");
});
afterEach(() => temp.remove());

const named = (displayName: string): Principal => ({ ...person("dora"), displayName });

describe("FirstWorkspace", () => {
  it("is named for its person, and made whatever name the identity provider gave them", async () => {
    const first = new FirstWorkspace(temp.workspaces);
    const cases: Array<[string, string]> = [
      ["Dora", "Dora's workspace"],
      ["x".repeat(190), `${"x".repeat(MAX_WORKSPACE_NAME_CHARS - 12)}'s workspace`],
      ["Tab\there\nnow", "Tab here now's workspace"],
      ["A\u0085B \u202Egnp\u200B", "A B gnp's workspace"],
      ["\u0007\u200B ", "My workspace"],
    ];
    for (const [i, [displayName, expected]] of cases.entries()) {
      const who = { ...named(displayName), id: `${person("dora").id}-${i}` };
      const [ws] = await first.ensure(who);
      expect(ws?.name).toBe(expected);
    }
  });

  it("cuts a long name on a code-point boundary, never between the halves of a pair", () => {
    // 187 units of "a" then emoji (2 units each): a cut by units would split the pair at 188.
    const name = firstWorkspaceName(`${"a".repeat(MAX_WORKSPACE_NAME_CHARS - 13)}${"😀".repeat(5)}`);
    expect(name).toBe(`${"a".repeat(MAX_WORKSPACE_NAME_CHARS - 13)}'s workspace`);
    expect(name.length).toBeLessThanOrEqual(MAX_WORKSPACE_NAME_CHARS);
    expect(firstWorkspaceName(`${"a".repeat(MAX_WORKSPACE_NAME_CHARS - 14)}😀😀`)).toBe(
      `${"a".repeat(MAX_WORKSPACE_NAME_CHARS - 14)}😀's workspace`,
    );
  });
});
