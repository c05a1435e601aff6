import { InvalidInput } from "../../errors.ts";
import { isPersonalSourceName, PERSONAL_SOURCE_PREFIX } from "../../sources/tool-names.ts";

// A personal connection's name (ADR 0042): its owner gives lowercase words, and its tools are
// served as `my_<name>__<tool>`; every route and tool then addresses it as `my_<name>`.

const WORDS = /^[a-z][a-z0-9-]{0,62}$/;

/** Whether `value` is a personal connection's source name, `my_<words>`. */
export function isPersonalConnectionName(value: string): boolean {
  return isPersonalSourceName(value) && WORDS.test(value.slice(PERSONAL_SOURCE_PREFIX.length));
}

/** The source name of a new personal connection from the name its owner gave. */
export function personalSourceName(name: unknown): string {
  if (typeof name === "string" && isPersonalSourceName(name)) {
    throw new InvalidInput(
      `Give the name without "${PERSONAL_SOURCE_PREFIX}": Atrium adds it, so "notes" is served as ${PERSONAL_SOURCE_PREFIX}notes.`,
    );
  }
  if (typeof name !== "string" || !WORDS.test(name)) {
    throw new InvalidInput(
      'A personal connection\'s name is 1 to 63 lowercase letters, digits and hyphens, starting with a letter (e.g. "notes").',
    );
  }
  return `${PERSONAL_SOURCE_PREFIX}${name}`;
}
