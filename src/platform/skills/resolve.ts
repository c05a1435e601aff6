import type { Skill, SkillScope } from "./model.ts";

/** Most local first. Org outranks platform within their shared tier: the operator's copy wins. */
export const SCOPE_PRECEDENCE: readonly SkillScope[] = ["user", "workspace", "org", "platform", "server"];

/** One skill per name: the one from the most local scope. Sorted by name. */
export function resolveSkills(candidates: readonly Skill[]): Skill[] {
  const winners = new Map<string, Skill>();
  for (const skill of candidates) {
    const current = winners.get(skill.name);
    if (!current || SCOPE_PRECEDENCE.indexOf(skill.scope) < SCOPE_PRECEDENCE.indexOf(current.scope)) {
      winners.set(skill.name, skill);
    }
  }
  return [...winners.values()].sort((a, b) => a.name.localeCompare(b.name));
}
