/** Where a skill is stored; the most local scope wins a shared name. */
export type SkillScope = "user" | "workspace" | "org" | "platform" | "server";

/** Who authored a skill. `vendored` is stamped in memory on platform skills, never read from disk. */
export type Provenance = "chat" | "admin" | "connector" | "import" | "vendored";

export type LoadingChannel = "always" | "dynamic";

export interface Skill {
  name: string;
  description: string;
  /**
   * The guidance. Held only by a skill that is no file (a connection's published one) or is
   * being written; a skill listed from a folder holds `bodyBytes` instead and its body is read
   * from its SKILL.md when asked for (bodyOf): kept in every listing, one person's skills were
   * held whole once per workspace they filled (adr/0098).
   */
  body?: string;
  /** A listed skill's body's size in UTF-8 bytes: the instructions tell what fits unread. */
  bodyBytes?: number;
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

/** A skill as a SKILL.md's text states it, body included (parseSkill). */
export type ParsedSkill = Skill & { body: string };

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
