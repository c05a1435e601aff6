// The one module that joins and splits namespaced tool names. A tool's name is
// `<source>__<tool>`: the workspace is never part of it, so a name cannot address another
// workspace; the source segment alone decides which door a call takes.

export const TOOL_NAME_SEPARATOR = "__";

// `my_` marks a source that belongs to one member (adr/0032); no other name holds an underscore.
const SOURCE_NAME = /^(?:my_)?[a-z][a-z0-9-]{0,62}$/;

export function isSourceName(value: string): boolean {
  return SOURCE_NAME.test(value) && !value.includes(TOOL_NAME_SEPARATOR);
}

/** The prefix of a personal connection's source name (ADR 0032, ADR 0042). */
export const PERSONAL_SOURCE_PREFIX = "my_";

/** Whether a source name is a personal connection's: only its owner can reach it. */
export function isPersonalSourceName(value: string): boolean {
  return value.startsWith(PERSONAL_SOURCE_PREFIX);
}

/**
 * The longest name a tool is served under, `<source>__<tool>` whole: MCP says a tool name SHOULD
 * be 1 to 128 characters, and the SDK's validateToolName calls a longer one invalid (adr/0039,
 * amended 2026-12-07).
 */
export const MAX_TOOL_NAME_CHARS = 128;

/** Whether `<source>__<tool>` is at most MAX_TOOL_NAME_CHARS long. */
export function fitsToolName(source: string, tool: string): boolean {
  return source.length + TOOL_NAME_SEPARATOR.length + tool.length <= MAX_TOOL_NAME_CHARS;
}

export function joinToolName(source: string, tool: string): string {
  return `${source}${TOOL_NAME_SEPARATOR}${tool}`;
}

/** Splits at the first separator; `undefined` when the name has none or an empty side. */
export function splitToolName(name: string): { source: string; tool: string } | undefined {
  const at = name.indexOf(TOOL_NAME_SEPARATOR);
  if (at <= 0) return undefined;
  const tool = name.slice(at + TOOL_NAME_SEPARATOR.length);
  if (tool.length === 0) return undefined;
  return { source: name.slice(0, at), tool };
}
