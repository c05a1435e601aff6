import { Conflict } from "../../errors.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import { loadingChannel } from "./channel.ts";
import { MIN_INSTRUCTIONS_BYTES } from "./config.ts";
import type { Skill } from "./model.ts";
import { bodyOf } from "./skill-body.ts";

const READ_TOOL = joinToolName("skills", "read");
const PREAMBLE =
  `This Atrium workspace provides guidance as skills. Read a catalog skill with the ${READ_TOOL} tool ` +
  "before the work it describes.";
const CATALOG_HEADING = "## Skill catalog\n";
const SECTION_GAP = "\n\n";
// Room kept back for the line that names what did not fit, so that line never breaks the bound.
const TRUNCATION_RESERVE_BYTES = 160;

const bytes = (text: string) => Buffer.byteLength(text);

/**
 * The `instructions` of `initialize`: `always` skills in the order given (name order, from
 * resolveSkills), then the catalog of `dynamic` skills (name and description only). Nothing
 * here depends on what was used, so the bytes change only when a skill is installed, edited
 * or removed. The result never exceeds `maxBytes`; what does not fit is named as truncated
 * rather than silently dropped. A body is read (`read`: bodyOf) only when its listed size fits,
 * so a composition reads at most `maxBytes` of skills' bodies, however many there are; one that
 * cannot be read now because it changed since the listing is named as not fitting too, and any
 * other failure to read one rejects the composition.
 */
export async function composeInstructions(
  skills: readonly Skill[],
  maxBytes: number,
  read: (skill: Skill) => Promise<string> = bodyOf,
): Promise<string> {
  // instance.json cannot set less than the floor; callers in code get it too.
  const limit = Math.max(maxBytes, MIN_INSTRUCTIONS_BYTES);
  const budget = limit - TRUNCATION_RESERVE_BYTES - bytes(SECTION_GAP + CATALOG_HEADING);
  let used = bytes(PREAMBLE);
  const truncated: string[] = [];
  const take = (text: string, gap: string): boolean => {
    if (used + bytes(gap + text) > budget) return false;
    used += bytes(gap + text);
    return true;
  };

  const sections: string[] = [];
  for (const skill of skills.filter((s) => loadingChannel(s) === "always")) {
    const heading = `## Skill: ${skill.name}\n\n`;
    const listed = skill.body === undefined ? (skill.bodyBytes ?? 0) : bytes(skill.body);
    const body =
      used + bytes(SECTION_GAP + heading) + listed > budget ? undefined : await bodyOrNot(read, skill);
    const section = `${heading}${body}`;
    // Taken by what was read: a file edited since its listing may have grown.
    if (body !== undefined && take(section, SECTION_GAP)) sections.push(section);
    else truncated.push(skill.name);
  }
  const catalog: string[] = [];
  for (const skill of skills.filter((s) => loadingChannel(s) === "dynamic")) {
    const line = `- ${skill.name}: ${skill.description}`;
    if (take(line, "\n")) catalog.push(line);
    else truncated.push(skill.name);
  }
  if (truncated.length > 0) catalog.push(truncationLine(truncated));

  const parts = [PREAMBLE, ...sections];
  if (catalog.length > 0) parts.push(`${CATALOG_HEADING}\n${catalog.join("\n")}`);
  return parts.join(SECTION_GAP);
}

/**
 * A body, or nothing when its file changed since the listing (`skill_unreadable`: the next request
 * lists the folder again and composes anew from what it finds). Any other failure (EMFILE, EIO)
 * moves no stamp, so "did not fit" would be kept, and false, until the folder changed: it fails
 * the composition instead (adr/0051, amended 2026-12-07).
 */
async function bodyOrNot(read: (skill: Skill) => Promise<string>, skill: Skill): Promise<string | undefined> {
  try {
    return await read(skill);
  } catch (error) {
    if (error instanceof Conflict && error.code === "skill_unreadable") return undefined;
    throw error;
  }
}

/** Names as many of the skipped skills as fit in the reserve, then counts the rest. */
function truncationLine(names: string[]): string {
  const end = ` did not fit; read them with ${READ_TOOL})`;
  let listed = "";
  let shown = 0;
  for (const name of names) {
    const next = listed ? `${listed}, ${name}` : name;
    const rest = names.length - shown - 1;
    const tail = rest > 0 ? ` and ${rest} more` : "";
    if (bytes(`- (truncated: ${next}${tail}${end}`) > TRUNCATION_RESERVE_BYTES) break;
    listed = next;
    shown += 1;
  }
  const rest = names.length - shown;
  const counted = rest > 0 ? `${listed ? `${listed} and ` : ""}${rest} more` : listed;
  return `- (truncated: ${counted}${end}`;
}
