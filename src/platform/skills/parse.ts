import matter from "gray-matter";
import { hidesText, spelledOut } from "../../text.ts";
import { type AtriumMetadata, validateAtriumMetadata } from "./metadata-schema.ts";
import {
  bodyText,
  isSkillName,
  MAX_DESCRIPTION_CHARS,
  type ParsedSkill,
  type Provenance,
  type SkillScope,
} from "./model.ts";

export class SkillInvalid extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

// gray-matter can evaluate `---js` front matter; a skill file is data, so those engines refuse.
const refuse = (): never => {
  throw new SkillInvalid(
    "front matter",
    "must be YAML (--- … ---); other front-matter languages are refused",
  );
};
const MATTER_OPTIONS = { engines: { js: refuse, javascript: refuse, coffee: refuse, coffeescript: refuse } };

/**
 * A SKILL.md's front matter as data, and the text after it as it is in the file (a suffix of
 * `text`). The data is a new object on every call: the caller may change it.
 */
export function frontMatterOf(text: string): { data: Record<string, unknown>; content: string } {
  try {
    // A fresh object as input bypasses gray-matter's cache, which would share parsed data.
    return matter({ content: text }, MATTER_OPTIONS) as unknown as {
      data: Record<string, unknown>;
      content: string;
    };
  } catch (error) {
    if (error instanceof SkillInvalid) throw error;
    // The parser's words may quote the file (a tag's name): spelled out, as they reach a model.
    const reason = spelledOut((error as Error).message.split("\n")[0] ?? "");
    throw new SkillInvalid("front matter", `is not valid YAML (${reason})`);
  }
}

/**
 * Parses and validates one SKILL.md. `vendored` provenance is never read from the file: the
 * caller passes it for platform skills only.
 */
export function parseSkill(text: string, scope: SkillScope, provenance?: Provenance): ParsedSkill {
  const { data, content } = frontMatterOf(text);
  if (!content.trim() && Object.keys(data).length === 0) {
    throw new SkillInvalid("front matter", "is missing: a SKILL.md starts with --- name, description --- ");
  }
  const name = data.name;
  if (typeof name !== "string" || !isSkillName(name)) {
    throw new SkillInvalid("name", "must be 1-64 lowercase letters, digits and single hyphens");
  }
  const description = data.description;
  // Characters as the Skills Extension counts them, code points, of the description as stored.
  if (
    typeof description !== "string" ||
    !description.trim() ||
    [...description.trim()].length > MAX_DESCRIPTION_CHARS
  ) {
    throw new SkillInvalid(
      "description",
      `must be a non-empty string of at most ${MAX_DESCRIPTION_CHARS} characters`,
    );
  }
  // What a reader cannot see must not reach a model's context; a connection to this workspace
  // would refuse the skill for it too (connections/snapshot.ts).
  if (hidesText(description)) {
    throw new SkillInvalid(
      "description",
      "must not hold invisible (zero-width, bidirectional, variation or tag) or control characters",
    );
  }
  const metadata = data.metadata;
  if (
    metadata !== undefined &&
    (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
  ) {
    throw new SkillInvalid("metadata", "must be a mapping");
  }
  const atrium = ((metadata as Record<string, unknown> | undefined)?.atrium ?? {}) as AtriumMetadata;
  if (!validateAtriumMetadata(atrium)) {
    const [first] = validateAtriumMetadata.errors ?? [];
    const where = `metadata.atrium${first?.instancePath.replaceAll("/", ".") ?? ""}`;
    const extra =
      first?.keyword === "additionalProperties"
        ? ` "${spelledOut(String(first.params.additionalProperty))}"`
        : "";
    throw new SkillInvalid(where, `${first?.message ?? "is invalid"}${extra}`);
  }
  // Checked last, so a refusal naming the body says nothing else is wrong (writer.ts lets a new
  // body replace such a one). The body reaches the model in full (the instructions, skills__read,
  // skill:// reads), so it is held to what a reviewer sees, as the description is (adr/0132).
  const body = bodyText(content);
  const hiding = lineHidingText(body);
  if (hiding !== undefined) {
    throw new SkillInvalid(
      "body",
      `must not hold invisible (zero-width, bidirectional, variation or tag) or control characters but tab and line ends; line ${hiding} of the body does`,
    );
  }
  return {
    name,
    description: description.trim(),
    body,
    scope,
    provenance: provenance ?? atrium.provenance ?? "admin",
    loading: atrium.loading ?? "dynamic",
    tools: atrium.tools ?? [],
  };
}

/**
 * The number (from 1) of the first line of `text` (a body, a whole SKILL.md) holding what a reader
 * cannot see, or undefined. A line's CRLF end is a line end, as a file saved on Windows has; any
 * other carriage return is a control like the rest, since a terminal draws what follows it over
 * the line's start.
 */
export function lineHidingText(text: string): number | undefined {
  const lines = text.split("\n");
  const index = lines.findIndex((line) => hidesText(line.endsWith("\r") ? line.slice(0, -1) : line));
  return index === -1 ? undefined : index + 1;
}
