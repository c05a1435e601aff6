import type { LoadingChannel, Skill } from "./model.ts";

/**
 * How a skill reaches the model. The one answer every read surface uses: `always` skills
 * are composed into the instructions, `dynamic` ones are listed in the catalog and read
 * on demand. The sets are disjoint by construction.
 */
export function loadingChannel(skill: Skill): LoadingChannel {
  return skill.loading === "always" ? "always" : "dynamic";
}
