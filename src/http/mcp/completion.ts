import type { WorkspaceGuidance } from "../../sources/guidance.ts";
import { SKILL_URI_TEMPLATE } from "./skills-extension.ts";

// The spec's cap on values in one completion answer.
const MAX_VALUES = 100;

interface CompleteParams {
  ref: { type: string; uri?: string; name?: string };
  argument: { name: string; value: string };
}

export type Completion = {
  values: string[];
  total: number;
  hasMore: boolean;
};

/**
 * What `completion/complete` can honestly offer: the paths of the caller's skills for the skill
 * resource template. Atrium has no prompts and no other templates, and an empty list is the
 * spec's answer where nothing completes.
 */
export async function completeArgument(
  guidance: WorkspaceGuidance,
  workspaceId: string,
  principalId: string,
  params: CompleteParams,
): Promise<Completion> {
  const { ref, argument } = params;
  if (ref.type !== "ref/resource" || ref.uri !== SKILL_URI_TEMPLATE || argument.name !== "path") {
    return { values: [], total: 0, hasMore: false };
  }
  const resources = await guidance.listResources(workspaceId, principalId);
  const paths = resources
    .map((resource) => resource.uri.slice("skill://".length))
    .filter((path) => path.startsWith(argument.value))
    .sort();
  return { values: paths.slice(0, MAX_VALUES), total: paths.length, hasMore: paths.length > MAX_VALUES };
}
