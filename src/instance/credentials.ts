import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { BootError } from "../errors.ts";

/**
 * Names a secret instead of holding it: an environment variable, or a file (relative to
 * instance.json) whose contents are the secret. instance.json can then be committed,
 * shared and logged without leaking anything.
 */
export type CredentialRef = { env: string } | { file: string };

/** Reads a referenced secret at boot; a missing or empty one stops the boot, naming the field. */
export function readCredential(ref: CredentialRef, field: string, baseDir: string): string {
  let value: string | undefined;
  if ("env" in ref) {
    value = process.env[ref.env];
    if (value === undefined) {
      if (looksLikeSecret(ref.env)) {
        // The secret itself written where its variable's name belongs: said without the value.
        throw new BootError(
          `${field} names an environment variable that is not set, and the name looks like a secret ` +
            `itself, so it is not shown: put the secret in a variable and name that, e.g. {"env": "ATRIUM_SECRET"}.`,
        );
      }
      throw new BootError(`${field} names the environment variable ${ref.env}, which is not set.`);
    }
  } else {
    const path = resolve(baseDir, ref.file);
    try {
      value = readFileSync(path, "utf8");
    } catch (error) {
      throw new BootError(
        `${field} names the file ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code}).`,
      );
    }
  }
  // A trailing newline is how editors and `echo` end a file, never part of the secret.
  const secret = value.replace(/\r?\n$/, "");
  if (secret.length === 0) throw new BootError(`${field} names an empty secret.`);
  return secret;
}

/**
 * Prefixes of tokens that providers issue (Stripe, OpenAI, GitHub, AWS, a JWT) that can stand
 * where a variable name does; Slack's `xox…-` cannot (the schema refuses `-` first).
 */
const SECRET_PREFIXES = /^(?:sk|rk|pk)_|^gh[pousr]_|^github_pat_|^AKIA|^eyJ/;
/** Longer than any environment variable name anyone writes by hand. */
const MAX_NAME_CHARS = 64;

/**
 * Whether an `{"env": …}` name is more likely a secret pasted in its place than a variable's
 * name: a known token prefix, or too long. Such a name is never echoed in a message
 * (test/unit/instance/load.test.ts "looks like a secret"). A name with characters no variable
 * name has (`xoxb-…`, base64) never gets here: the schema refuses it without quoting it.
 */
function looksLikeSecret(name: string): boolean {
  return SECRET_PREFIXES.test(name) || name.length > MAX_NAME_CHARS;
}
