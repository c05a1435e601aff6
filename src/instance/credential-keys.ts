import { decodeSealKey, SEAL_KEY_BYTES, type SealKeyRing } from "../crypto/seal.ts";
import { BootError } from "../errors.ts";
import { type CredentialRef, readCredential } from "./credentials.ts";

/** instance.json's `credentials` section as the schema has already checked it. */
export interface CredentialKeysSection {
  keys: Array<{ version: number; key: CredentialRef }>;
}

/**
 * Reads each credential key through its reference. A key is 32 bytes, written as base64 or 64 hex
 * characters; anything else stops the boot naming the field and what a key looks like, never the
 * text that was found (it may be a real secret put in the wrong place).
 */
export function resolveCredentialKeys(section: CredentialKeysSection, baseDir: string): SealKeyRing {
  const keys = new Map<number, Buffer>();
  section.keys.forEach(({ version, key: ref }, index) => {
    const field = `credentials.keys[${index}].key`;
    if (keys.has(version)) {
      throw new BootError(
        `credentials.keys[${index}].version is ${version}, which an earlier key already has: ` +
          "each key has its own version.",
      );
    }
    const key = decodeSealKey(readCredential(ref, field, baseDir));
    if (!key) {
      throw new BootError(
        `${field} (version ${version}) is not a ${SEAL_KEY_BYTES}-byte key: it must be ${SEAL_KEY_BYTES} ` +
          "random bytes written as base64 or as 64 hex characters, e.g. the output of `openssl rand -base64 32`.",
      );
    }
    keys.set(version, key);
  });
  return { keys, newest: Math.max(...keys.keys()) };
}
