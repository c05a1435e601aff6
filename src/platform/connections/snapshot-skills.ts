import type { Logger } from "../../log.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import type { PublishedSkill, PublishedSkillList, PublishedSkillProblem } from "../app.ts";
import type { Snapshot } from "./snapshot.ts";

/**
 * What a snapshot publishes as server-scope skills: the server's instructions, named after the
 * connection and bound to its tools, and each skill it offers through the Skills Extension, named
 * `<connection>-<skill>` so two servers' skills of one name never shadow each other. Those names
 * can still meet (skillNameClashes).
 */
export function skillsOf(connection: string, snapshot: Snapshot): PublishedSkill[] {
  const base = skillName(connection);
  const published: PublishedSkill[] = (snapshot.skills ?? []).map((skill) => ({
    name: skillName(`${base}-${skill.name}`),
    description: skill.description,
    body: skill.body,
    tools: [],
  }));
  if (snapshot.instructions) {
    const server = snapshot.serverInfo?.name ?? connection;
    published.unshift({
      name: base,
      description: `How to use the tools of ${server}, connected here as "${connection}" (its server's own instructions).`,
      body: snapshot.instructions,
      tools: [joinToolName(connection, "*")],
    });
  }
  return published;
}

/** A skill name: the Agent Skills rule allows no doubled or trailing hyphen and 64 characters. */
function skillName(text: string): string {
  return text.replace(/-+/g, "-").slice(0, 64).replace(/-$/, "");
}

/** One connection's skills as its current snapshot publishes them. */
export interface ConnectionSkills {
  connection: string;
  skills: readonly PublishedSkill[];
}

/**
 * A workspace's connections' skills, without every skill whose name another one also maps to:
 * connection `acme-tools`'s instructions and connection `acme`'s skill `tools` are both
 * `acme-tools`, and two long names of one server meet at the 64-character cut. Serving either
 * would serve one server's text under a name another's is published by, chosen by nothing more
 * than the order of names; so none of them is served, whatever the order, and each clash is a
 * problem the skills listing shows, logged once (test/unit/platform/connections/snapshot-skills.test.ts).
 */
export class SkillNameClashes {
  /**
   * Each workspace's clashes as its last listing found them, by name and publishers: one problem
   * object each, logged when it first appears. Replaced whole by each listing, so a clash that
   * ends is forgotten (and logged again should it come back).
   */
  private readonly known = new Map<string, Map<string, PublishedSkillProblem>>();

  constructor(private readonly log: Logger) {}

  apart(workspaceId: string, published: readonly ConnectionSkills[]): PublishedSkillList {
    const publishers = new Map<string, string[]>();
    for (const { connection, skills } of published)
      for (const { name } of skills) publishers.set(name, [...(publishers.get(name) ?? []), connection]);
    const before = this.known.get(workspaceId);
    const now = new Map<string, PublishedSkillProblem>();
    for (const [name, connections] of publishers) {
      if (connections.length < 2) continue;
      const key = JSON.stringify([name, connections.sort()]);
      now.set(key, before?.get(key) ?? this.problem(workspaceId, name, connections));
    }
    if (now.size > 0) this.known.set(workspaceId, now);
    else this.known.delete(workspaceId);
    return {
      skills: published.flatMap(({ skills }) =>
        skills.filter(({ name }) => publishers.get(name)?.length === 1),
      ),
      problems: [...now.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
    };
  }

  /** A workspace whose published skills were dropped (idle): its clashes go too, logged again if met. */
  forget(workspaceId: string): void {
    this.known.delete(workspaceId);
  }

  private problem(workspaceId: string, name: string, connections: string[]): PublishedSkillProblem {
    const distinct = [...new Set(connections)];
    const who =
      distinct.length === 1
        ? `connection "${distinct[0]}" publishes ${connections.length} skills`
        : `connections ${distinct.map((c) => `"${c}"`).join(", ")} publish skills`;
    this.log.warn(
      { workspaceId, skill: name, connections: distinct },
      "connection skills left out: their names clash",
    );
    return {
      name,
      message: `${who} under this one name; none of them is served (remove a connection and add it again under another name, or have its server rename a skill)`,
    };
  }
}
