import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

// Sealing: AES-256-GCM with a fresh random 96-bit nonce per seal, and associated data that names
// where the value belongs, so a sealed value opens only there (ADR 0036). Every field of the
// sealed shape is checked before anything is decrypted, and anything that is not exactly this
// shape is refused: a value that claims to be sealed opens or is refused, never read as plaintext.

/** The format tag every sealed value carries; a new format gets a new tag. */
export const SEAL_FORMAT = "atrium-seal-1";
/** AES-256: a key is 32 bytes. */
export const SEAL_KEY_BYTES = 32;
/** 96 bits, the nonce length GCM is defined for (NIST SP 800-38D §8.2.2, random construction). */
const NONCE_BYTES = 12;
/** The full 128-bit tag; shorter tags are refused (node accepts them unless told the length). */
const TAG_BYTES = 16;
const CIPHER = "aes-256-gcm";

/** A sealed value as it is stored: base64url fields, and the version of the key that sealed it. */
export interface SealedValue {
  v: typeof SEAL_FORMAT;
  /** The key version (`credentials.keys[].version`) that sealed it. */
  kv: number;
  nonce: string;
  ct: string;
  tag: string;
}

/** The configured keys by version; new seals use `newest`, any listed version opens. */
export interface SealKeyRing {
  keys: ReadonlyMap<number, Buffer>;
  newest: number;
}

export type SealFailure = "unknown_key_version" | "tampered" | "malformed";

/** Why a sealed value did not open. It never carries the value, the key or the plaintext. */
export class SealError extends Error {
  constructor(
    readonly reason: SealFailure,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Sealed under a key version that is not configured (dropped too early, or a foreign value). */
export class UnknownKeyVersion extends SealError {
  constructor(readonly keyVersion: number) {
    super(
      "unknown_key_version",
      `The value is sealed under key version ${keyVersion}, which credentials.keys does not list: ` +
        "put that key back (then run `atrium credentials reseal` before removing it).",
    );
  }
}

/**
 * The tag did not verify: the ciphertext, nonce or tag was changed, the value was moved from where
 * it was sealed, or the key configured under its version is not the one that sealed it. GCM cannot
 * tell these apart, so the message names all three, the wrong key first: it is the operator's
 * likeliest mistake (a new key put under an old version), and the one they can fix.
 */
export class SealTampered extends SealError {
  constructor(readonly keyVersion: number) {
    super(
      "tampered",
      `The sealed value does not open with the key listed as version ${keyVersion}: either that ` +
        `is not the key it was sealed with (put the original version ${keyVersion} key back; a new ` +
        "key takes a new, higher version), or the value was changed on disk or belongs to another " +
        "record or field.",
    );
  }
}

/** Not a sealed value of a known format; named by what is wrong with it, never by its contents. */
export class MalformedSeal extends SealError {
  constructor(what: string) {
    super("malformed", `The value is not a well-formed sealed value: ${what}.`);
  }
}

/** Seals `plaintext` under `key`, binding `aad`; a fresh random nonce every call. */
export function seal(key: Uint8Array, keyVersion: number, plaintext: string, aad: string): SealedValue {
  if (key.length !== SEAL_KEY_BYTES) throw new TypeError(`A seal key is ${SEAL_KEY_BYTES} bytes.`);
  if (!isKeyVersion(keyVersion)) throw new TypeError("A key version is a positive whole number.");
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(CIPHER, key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return {
    v: SEAL_FORMAT,
    kv: keyVersion,
    nonce: nonce.toString("base64url"),
    ct: ct.toString("base64url"),
    tag: cipher.getAuthTag().toString("base64url"),
  };
}

/**
 * Opens a sealed value bound to `aad` with the key of the version it names. `sealed` is taken as
 * found on disk: anything but a well-formed sealed value is `MalformedSeal`, a version not in
 * `keys` is `UnknownKeyVersion`, and a failed authentication is `SealTampered`.
 */
export function open(keys: ReadonlyMap<number, Uint8Array>, sealed: unknown, aad: string): string {
  const value = checkSealed(sealed);
  const key = keys.get(value.kv);
  if (!key) throw new UnknownKeyVersion(value.kv);
  const decipher = createDecipheriv(CIPHER, key, value.nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(value.tag);
  let plaintext: Buffer;
  try {
    plaintext = Buffer.concat([decipher.update(value.ct), decipher.final()]);
  } catch {
    // node throws "Unsupported state or unable to authenticate data": the tag did not verify.
    throw new SealTampered(value.kv);
  }
  return plaintext.toString("utf8");
}

/** The version a well-formed sealed value names; `MalformedSeal` for anything else. */
export function sealedKeyVersion(sealed: unknown): number {
  return checkSealed(sealed).kv;
}

/**
 * A seal key from its configured text: 64 hex characters, or base64 (standard or url-safe,
 * padded or not) of exactly 32 bytes. `undefined` for anything else; the caller names the field.
 */
export function decodeSealKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text.replaceAll("-", "+").replaceAll("_", "/"), "base64");
  if (bytes.length !== SEAL_KEY_BYTES) return undefined;
  // Node's decoder skips what it cannot read; the text must be exactly these bytes' encoding.
  const unpadded = text.replace(/=+$/, "");
  const canonical = bytes.toString("base64").replace(/=+$/, "");
  const canonicalUrl = bytes.toString("base64url");
  if (unpadded !== canonical && unpadded !== canonicalUrl) return undefined;
  return bytes;
}

export function isKeyVersion(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

interface CheckedSeal {
  kv: number;
  nonce: Buffer;
  ct: Buffer;
  tag: Buffer;
}

const SEALED_FIELDS = ["v", "kv", "nonce", "ct", "tag"];

function checkSealed(sealed: unknown): CheckedSeal {
  if (typeof sealed !== "object" || sealed === null || Array.isArray(sealed)) {
    throw new MalformedSeal(
      `it is ${sealed === null ? "null" : Array.isArray(sealed) ? "an array" : `a ${typeof sealed}`}, not an object`,
    );
  }
  const record = sealed as Record<string, unknown>;
  if (record.v !== SEAL_FORMAT) {
    throw new MalformedSeal(
      typeof record.v === "string"
        ? "its format is not one this Atrium reads"
        : `"v" is not "${SEAL_FORMAT}"`,
    );
  }
  const extra = Object.keys(record).filter((name) => !SEALED_FIELDS.includes(name));
  if (extra.length > 0)
    throw new MalformedSeal(`it has fields a sealed value does not (${extra.join(", ")})`);
  if (!isKeyVersion(record.kv)) throw new MalformedSeal(`"kv" is not a positive whole number`);
  const nonce = base64urlField(record, "nonce");
  if (nonce.length !== NONCE_BYTES) throw new MalformedSeal(`"nonce" is not ${NONCE_BYTES} bytes`);
  const tag = base64urlField(record, "tag");
  if (tag.length !== TAG_BYTES) throw new MalformedSeal(`"tag" is not ${TAG_BYTES} bytes`);
  return { kv: record.kv, nonce, ct: base64urlField(record, "ct"), tag };
}

function base64urlField(record: Record<string, unknown>, name: string): Buffer {
  const text = record[name];
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text)) {
    throw new MalformedSeal(`"${name}" is not base64url`);
  }
  const bytes = Buffer.from(text, "base64url");
  // A length no encoding produces (one character past a whole byte) is refused, not truncated.
  if (bytes.toString("base64url") !== text) throw new MalformedSeal(`"${name}" is not base64url`);
  return bytes;
}
