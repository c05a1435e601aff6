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
