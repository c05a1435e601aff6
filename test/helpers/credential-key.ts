import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** instance.json's `credentials` section naming the key file `keyedDir` writes. */
export const CREDENTIALS_SECTION = { keys: [{ version: 1, key: { file: "credential-key" } }] };

/**
 * A fresh temp dir for `startTestAtrium({ dir })` with its `data/` root and a generated credential
 * key beside it, so connections can seal what they are given (ADR 0036). The caller removes it.
 */
export async function keyedDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await mkdir(join(dir, "data"));
  await writeFile(join(dir, "credential-key"), randomBytes(32).toString("base64"));
  return dir;
}
