import { describe, expect, it } from "vitest";
import { loadingChannel } from "../../../../src/platform/skills/channel.ts";
import type { Skill, SkillScope } from "../../../../src/platform/skills/model.ts";
import { resolveSkills, SCOPE_PRECEDENCE } from "../../../../src/platform/skills/resolve.ts";

function skill(name: string, scope: SkillScope, extra: Partial<Skill> = {}): Skill {
  return {
    name,
    description: `${name} from ${scope}`,
    body: `body of ${name} (${scope})`,
    scope,
    provenance: scope === "platform" ? "vendored" : "admin",
    loading: "dynamic",
    tools: [],
    ...extra,
  };
}

const MOST_LOCAL_FIRST: SkillScope[] = ["user", "workspace", "org", "platform", "server"];

describe("resolveSkills", () => {
  it("orders the scopes user, workspace, org, platform, server", () => {
    expect(SCOPE_PRECEDENCE).toEqual(MOST_LOCAL_FIRST);
  });

  it("keeps the most local of five same-named skills, whatever order they arrive in", () => {
    const all = MOST_LOCAL_FIRST.map((scope) => skill("report", scope));
    for (const order of [all, [...all].reverse(), [all[2], all[4], all[0], all[3], all[1]]]) {
      const resolved = resolveSkills(order as Skill[]);
      expect(resolved).toHaveLength(1);
      expect(resolved[0]?.scope).toBe("user");
    }
  });

  it("falls to the next scope as each more local one is removed", () => {
    const remaining = MOST_LOCAL_FIRST.map((scope) => skill("report", scope)).reverse();
    for (const expected of MOST_LOCAL_FIRST) {
      expect(resolveSkills(remaining)[0]?.scope).toBe(expected);
      remaining.splice(
        remaining.findIndex((s) => s.scope === expected),
        1,
      );
    }
    expect(resolveSkills(remaining)).toEqual([]);
  });

  it("an org skill outranks the platform's copy of the same name", () => {
    const resolved = resolveSkills([skill("report", "platform"), skill("report", "org")]);
    expect(resolved.map((s) => s.scope)).toEqual(["org"]);
  });

  it("returns one skill per name, sorted by name", () => {
    const resolved = resolveSkills([
      skill("zeta", "platform"),
      skill("alpha", "server"),
      skill("mid-2", "workspace"),
      skill("mid-10", "user"),
      skill("alpha", "workspace"),
      skill("beta", "org"),
    ]);
    expect(resolved.map((s) => `${s.name}:${s.scope}`)).toEqual([
      "alpha:workspace",
      "beta:org",
      "mid-10:user",
      "mid-2:workspace",
      "zeta:platform",
    ]);
  });
});

describe("loadingChannel", () => {
  it("puts every skill in exactly one of always and dynamic", () => {
    const skills = [
      skill("a", "user", { loading: "always" }),
      skill("b", "workspace", { loading: "dynamic" }),
      skill("c", "org", { loading: "always" }),
      skill("d", "platform"),
    ];
    const always = skills.filter((s) => loadingChannel(s) === "always").map((s) => s.name);
    const dynamic = skills.filter((s) => loadingChannel(s) === "dynamic").map((s) => s.name);
    expect(always).toEqual(["a", "c"]);
    expect(dynamic).toEqual(["b", "d"]);
  });
});
