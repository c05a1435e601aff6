import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A temp dir for startTestAtrium's `dir` (with its `data/` root) holding a fresh credential key,
 * and the instance.json `credentials` section that names it: an instance that can seal.
 */
export async function dirWithCredentialKey(prefix: string): Promise<{
  dir: string;
  credentials: { keys: { version: number; key: { file: string } }[] };
}> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await mkdir(join(dir, "data"));
  await writeFile(join(dir, "credential-key"), randomBytes(32).toString("base64"));
  return { dir, credentials: { keys: [{ version: 1, key: { file: "credential-key" } }] } };
}
