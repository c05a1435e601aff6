import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { equalSecrets, hashSecret } from "../crypto/secrets.ts";
import type { GrantRecord } from "./grant-record.ts";

/**
 * The grace after a rotation (ADR 0136): the refresh token a rotation just replaced, presented
 * again by the same client within `oauth.refreshReuseGraceSeconds`, is answered with the very
 * successor that rotation issued, so a retried refresh whose answer was lost, or two refreshes
 * sent at once, end holding one token and the family lives. Only hashes of live tokens are
 * stored; the successor is kept sealed under a key derived from the token it replaced, which
 * is stored nowhere, so only a holder of that token can open it.
 */

const CIPHER = "aes-256-gcm";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_INFO = "atrium oauth refresh successor v1";

/** The successor sealed for the grace: `nonce.ciphertext.tag`, base64url, opened only by `replaced`. */
export function sealSuccessor(replaced: string, successor: string): string {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(CIPHER, keyOf(replaced), nonce, { authTagLength: TAG_BYTES });
  const sealed = Buffer.concat([cipher.update(successor, "utf8"), cipher.final()]);
  return [nonce, sealed, cipher.getAuthTag()].map((part) => part.toString("base64url")).join(".");
}

/**
 * What the grace says of a refresh token that is not the grant's current one: answer it with
 * `successor`; refuse it without judging it, because this clock reads before the rotation it
 * would be measured from (`clockBehind`); or `undefined`, when reuse detection is to judge it.
 */
export type GraceAnswer = { successor: string } | "clockBehind" | undefined;

/**
 * The grace's answer to `presented`: a successor when it is the token the grant's last rotation
 * replaced (never an older one), `clientId` is the grant's, that rotation was 0 to `graceMs`
 * ago, and the sealed successor opens with the presented token to the grant's current one.
 * A clock that reads before the rotation (stepped back since) cannot tell how long ago it was,
 * so such a token is neither answered nor judged as reuse (ADR 0136, "a clock stepped back").
 */
export function graceAnswer(
  record: GrantRecord,
  presented: { token: string; clientId: string },
  now: number,
  graceMs: number,
): GraceAnswer {
  const replaced = record.previousRefreshHashes[0];
  const { successorSealed, refreshedAt, currentRefreshHash } = record;
  if (graceMs <= 0 || record.clientId !== presented.clientId) return undefined;
  if (replaced === undefined || successorSealed === undefined || currentRefreshHash === undefined) {
    return undefined;
  }
  if (refreshedAt === undefined || !equalSecrets(hashSecret(presented.token), replaced)) return undefined;
  const since = now - refreshedAt;
  if (since < 0) return "clockBehind";
  if (since >= graceMs) return undefined;
  const successor = openSuccessor(presented.token, successorSealed);
  // Sealed at the rotation that made the current token, so it opens to exactly that one.
  return successor !== undefined && equalSecrets(hashSecret(successor), currentRefreshHash)
    ? { successor }
    : undefined;
}

function openSuccessor(replaced: string, sealed: string): string | undefined {
  const [nonce, body, tag, ...rest] = sealed.split(".").map((part) => Buffer.from(part, "base64url"));
  if (nonce?.length !== NONCE_BYTES || body === undefined || tag?.length !== TAG_BYTES || rest.length > 0) {
    return undefined;
  }
  try {
    const decipher = createDecipheriv(CIPHER, keyOf(replaced), nonce, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

/** A key derived from the replaced token itself: its SHA-256, which is stored, does not yield it. */
function keyOf(replaced: string): Buffer {
  return Buffer.from(hkdfSync("sha256", replaced, "", KEY_INFO, 32));
}
