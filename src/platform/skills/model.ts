/** Where a skill is stored; the most local scope wins a shared name. */
export type SkillScope = "user" | "workspace" | "org" | "platform" | "server";

/** Who authored a skill. `vendored` is stamped in memory on platform skills, never read from disk. */
export type Provenance = "chat" | "admin" | "connector" | "import" | "vendored";

export type LoadingChannel = "always" | "dynamic";

export interface Skill {
  name: string;
  description: string;
  body: string;
  scope: SkillScope;
  provenance: Provenance;
  loading: LoadingChannel;
  /** Tool names or `source__*` patterns this skill is guidance for. */
  tools: string[];
  /** Files bundled beside SKILL.md, as paths relative to the skill's folder. */
  files?: string[];
  /** The skill's folder, for skills read from disk. */
  dir?: string;
}

/** A file in a scope's folder that could not be read as a skill, reported and skipped. */
export interface SkillProblem {
  scope: SkillScope;
  name: string;
  message: string;
}

// The Agent Skills naming rule: lowercase letters, digits and single hyphens.
const SKILL_NAME = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}$/;
export const MAX_DESCRIPTION_CHARS = 1024;

export function isSkillName(value: string): boolean {
  return SKILL_NAME.test(value);
}

/**
 * A skill's body as it is kept: the blank lines before its first line and the whitespace after
 * its end are not its text, but the indentation its first line opens with is (an indented code
 * block in Markdown).
 */
export function bodyText(body: string): string {
  return body.replace(/^(?:[ \t]*\r?\n)+/, "").trimEnd();
}
