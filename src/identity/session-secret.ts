import { readFile } from "node:fs/promises";
import { randomSecret } from "../crypto/secrets.ts";
import { BootError } from "../errors.ts";
import { MIN_SESSION_SECRET_BYTES, type SessionConfig } from "../instance/schema.ts";
import { createFileExclusive } from "../storage/exclusive.ts";
import { makeFolderPathIfMissing } from "../storage/folders.ts";
import type { StorageLayout } from "../storage/paths.ts";

const GENERATED_SECRET_BYTES = 48;

/**
 * The secret that signs session cookies: the configured one, or under `dev` (which needs
 * none configured) one generated on first boot and kept in the data root, mode 0600, so
 * a restart does not sign everyone out.
 */
export async function sessionSecret(config: SessionConfig, layout: StorageLayout): Promise<string> {
  if (config.secret !== undefined) return config.secret;
  const path = layout.instanceSecretFile("session-secret");
  const stored = await readStored(path);
  if (stored !== undefined) return stored;
  const secret = randomSecret(GENERATED_SECRET_BYTES);
  await makeFolderPathIfMissing(layout.instanceDir());
  // Created exclusively (0600 before a byte is written): of two processes booting on a fresh
  // root one writes it and the other reads that one, so both sign with the secret that is kept
  // (test/unit/identity/session-secret.test.ts "racing").
  if (await createFileExclusive(path, `${secret}\n`)) return secret;
  const winner = await readStored(path);
  if (winner === undefined)
    throw new BootError(`The session secret ${path} vanished while it was being created.`);
  return winner;
}

async function readStored(path: string): Promise<string | undefined> {
  const stored = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw new BootError(`Cannot read the session secret ${path}: ${error.message}`);
  });
  if (stored === undefined) return undefined;
  const secret = stored.trim();
  if (Buffer.byteLength(secret) < MIN_SESSION_SECRET_BYTES) {
    throw new BootError(
      `${path} holds a session secret shorter than ${MIN_SESSION_SECRET_BYTES} bytes; delete it and ` +
        "Atrium makes a new one (everyone signed in is signed out).",
    );
  }
  return secret;
}
