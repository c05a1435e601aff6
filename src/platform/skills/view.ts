import { loadingChannel } from "./channel.ts";
import type { LoadingChannel, Provenance, Skill, SkillScope } from "./model.ts";

export interface SkillView {
  name: string;
  description: string;
  scope: SkillScope;
  provenance: Provenance;
  channel: LoadingChannel;
  tools: string[];
  files: string[];
}

/** How a resolved skill is shown on every surface (skills__list, REST). */
export function skillView(skill: Skill): SkillView {
  return {
    name: skill.name,
    description: skill.description,
    scope: skill.scope,
    provenance: skill.provenance,
    channel: loadingChannel(skill),
    tools: skill.tools,
    files: skill.files ?? [],
  };
}
