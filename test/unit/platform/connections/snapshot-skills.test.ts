import { describe, expect, it } from "vitest";
import type { Snapshot } from "../../../../src/platform/connections/snapshot.ts";
import { SkillNameClashes, skillsOf } from "../../../../src/platform/connections/snapshot-skills.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";

const WS = "ws_0123456789abcdef";

function snapshot(extra: Partial<Snapshot>): Snapshot {
  return {
    version: 1,
    takenAt: "2026-01-01T00:00:00.000Z",
    generation: 1,
    protocolVersion: "2026-07-28",
    tools: [],
    digests: {},
    digest: "sha256:0",
    ...extra,
  };
}

const offers = (...names: string[]) => ({
  skills: names.map((name) => ({ name, description: `${name}, described`, body: `the text of ${name}` })),
});

describe("the skills a workspace's connections publish", () => {
  it("leaves out every skill whose name another connection's also maps to, in either order, and says why once", () => {
    const { log, lines } = memoryLog();
    const clashes = new SkillNameClashes(log);
    const acmeTools = {
      connection: "acme-tools",
      skills: skillsOf("acme-tools", snapshot({ instructions: "Mine." })),
    };
    const acme = { connection: "acme", skills: skillsOf("acme", snapshot(offers("tools", "docs"))) };
    for (const order of [
      [acmeTools, acme],
      [acme, acmeTools],
    ]) {
      const { skills, problems } = clashes.apart(WS, order);
      expect(skills.map((skill) => skill.name)).toEqual(["acme-docs"]);
      expect(problems).toEqual([
        {
          name: "acme-tools",
          message: expect.stringContaining(
            'connections "acme", "acme-tools" publish skills under this one name',
          ),
        },
      ]);
    }
    expect(lines.filter((line) => line.msg === "connection skills left out: their names clash")).toHaveLength(
      1,
    );
  });

  it("forgets a clash once a listing no longer has it, and says so again if it comes back", () => {
    const { log, lines } = memoryLog();
    const clashes = new SkillNameClashes(log);
    const a = {
      connection: "acme-tools",
      skills: skillsOf("acme-tools", snapshot({ instructions: "Mine." })),
    };
    const b = { connection: "acme", skills: skillsOf("acme", snapshot(offers("tools"))) };
    const said = () => lines.filter((line) => line.msg === "connection skills left out: their names clash");
    expect(clashes.apart(WS, [a, b]).problems).toHaveLength(1);
    expect(clashes.apart(WS, [a]).problems).toEqual([]);
    expect(clashes.apart(WS, [a, b]).problems).toHaveLength(1);
    expect(said()).toHaveLength(2);
  });

  it("leaves out two skills of one server that meet at the 64-character cut", () => {
    const long = "x".repeat(70);
    const published = skillsOf("srv", snapshot(offers(`${long}a`, `${long}b`, "short")));
    const { skills, problems } = new SkillNameClashes(memoryLog().log).apart(WS, [
      { connection: "srv", skills: published },
    ]);
    expect(skills.map((skill) => skill.name)).toEqual(["srv-short"]);
    expect(problems).toEqual([
      {
        name: `srv-${"x".repeat(60)}`,
        message: expect.stringContaining('connection "srv" publishes 2 skills'),
      },
    ]);
  });
});
