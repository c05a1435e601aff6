import { joinToolName } from "../../sources/tool-names.ts";
import type { PublishedSkill } from "../app.ts";
import type { Snapshot } from "./snapshot.ts";

/**
 * What a snapshot publishes as server-scope skills: the server's instructions, named after the
 * connection and bound to its tools, and each skill it offers through the Skills Extension, named
 * `<connection>-<skill>` so two servers' skills of one name never shadow each other.
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
