import { joinToolName } from "../../sources/tool-names.ts";
import { loadingChannel } from "./channel.ts";
import type { Skill } from "./model.ts";

const READ_TOOL = joinToolName("skills", "read");
const PREAMBLE =
  `This Atrium workspace provides guidance as skills. Read a catalog skill with the ${READ_TOOL} tool ` +
  "before the work it describes.";

/**
 * The `instructions` of `initialize`: `always` skills in name order, then the catalog of
 * `dynamic` skills (name and description only). Nothing here depends on what was used, so
 * the bytes change only when a skill is installed, edited or removed. What does not fit in
 * `maxBytes` is named as truncated rather than silently dropped.
 */
export function composeInstructions(skills: readonly Skill[], maxBytes: number): string {
  const always = skills.filter((s) => loadingChannel(s) === "always");
  const dynamic = skills.filter((s) => loadingChannel(s) === "dynamic");
  const parts: string[] = [PREAMBLE];
  const truncated: string[] = [];
  let used = Buffer.byteLength(PREAMBLE);
  const fits = (text: string) => used + Buffer.byteLength(text) + 2 <= maxBytes;

  for (const skill of always) {
    const section = `## Skill: ${skill.name}\n\n${skill.body}`;
    if (fits(section)) {
      parts.push(section);
      used += Buffer.byteLength(section) + 2;
    } else truncated.push(skill.name);
  }
  const catalog: string[] = [];
  for (const skill of dynamic) {
    const line = `- ${skill.name}: ${skill.description}`;
    if (fits(line)) {
      catalog.push(line);
      used += Buffer.byteLength(line) + 1;
    } else truncated.push(skill.name);
  }
  if (catalog.length > 0 || truncated.length > 0) {
    const lines = ["## Skill catalog", "", ...catalog];
    if (truncated.length > 0) {
      lines.push(`- (truncated: ${truncated.join(", ")} did not fit; read them with ${READ_TOOL})`);
    }
    parts.push(lines.join("\n"));
  }
  return parts.join("\n\n");
}
