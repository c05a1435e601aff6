import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  decodeSealKey,
  MalformedSeal,
  open,
  SEAL_FORMAT,
  type SealedValue,
  SealTampered,
  seal,
  sealedKeyVersion,
  UnknownKeyVersion,
} from "../../../src/crypto/seal.ts";

const KEY_1 = randomBytes(32);
const KEY_2 = randomBytes(32);
const KEYS = new Map([
  [1, KEY_1],
  [2, KEY_2],
]);
const AAD = "cn_0123456789abcdef\nauth.value\ncred_0123456789abcdef01234567";
const SECRET = "sk-live-d0n0tl0g";

/** One bit of a base64url field flipped, still well-formed base64url of the same length. */
function flipped(field: string): string {
  const bytes = Buffer.from(field, "base64url");
  bytes[0] = (bytes[0] as number) ^ 0x01;
  return bytes.toString("base64url");
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("seal and open", () => {
  it("a sealed value opens to its plaintext with the same key and associated data", () => {
    const sealed = seal(KEY_2, 2, SECRET, AAD);
    expect(sealed).toMatchObject({ v: SEAL_FORMAT, kv: 2 });
    expect(Object.keys(sealed).sort()).toEqual(["ct", "kv", "nonce", "tag", "v"]);
    expect(open(KEYS, sealed, AAD)).toBe(SECRET);
  });

  it("holds no trace of the plaintext, and two seals of one value share neither nonce nor ciphertext", () => {
    const a = seal(KEY_1, 1, SECRET, AAD);
    const b = seal(KEY_1, 1, SECRET, AAD);
    expect(JSON.stringify(a)).not.toContain(SECRET);
    expect(JSON.stringify(a)).not.toContain(Buffer.from(SECRET).toString("base64url"));
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.ct).not.toBe(b.ct);
    expect(Buffer.from(a.nonce, "base64url")).toHaveLength(12);
    expect(Buffer.from(a.tag, "base64url")).toHaveLength(16);
  });

  it("opens Unicode and empty values unchanged", () => {
    for (const value of ["", "pässwörd 🔑", "a\nb\u0000c"]) {
      expect(open(KEYS, seal(KEY_1, 1, value, AAD), AAD)).toBe(value);
    }
  });

  it.for(["ct", "tag", "nonce"] as const)("a changed %s is refused as tampered", (field) => {
    const sealed = seal(KEY_1, 1, SECRET, AAD);
    const error = thrown(() => open(KEYS, { ...sealed, [field]: flipped(sealed[field]) }, AAD));
    expect(error).toBeInstanceOf(SealTampered);
    expect((error as SealTampered).reason).toBe("tampered");
  });

  it("other associated data (another record, field or id) is refused as tampered", () => {
    const sealed = seal(KEY_1, 1, SECRET, AAD);
    for (const aad of [
      AAD.replace("cn_0", "cn_1"),
      AAD.replace("auth.value", "auth.header"),
      "",
      `${AAD}\n`,
    ]) {
      expect(thrown(() => open(KEYS, sealed, aad))).toBeInstanceOf(SealTampered);
    }
  });

  it("a value relabelled with another key version is refused, not opened with that key", () => {
    const sealed = seal(KEY_1, 1, SECRET, AAD);
    expect(thrown(() => open(KEYS, { ...sealed, kv: 2 }, AAD))).toBeInstanceOf(SealTampered);
  });

  it("a key version that is not configured is refused, naming the version and what to do", () => {
    const sealed = seal(KEY_1, 7, SECRET, AAD);
    const error = thrown(() => open(KEYS, sealed, AAD));
    expect(error).toBeInstanceOf(UnknownKeyVersion);
    expect(error).toMatchObject({ keyVersion: 7, reason: "unknown_key_version" });
    expect((error as Error).message).toContain("atrium credentials reseal");
  });

  it("the wrong key under the right version is refused as tampered, the wrong key named first", () => {
    const sealed = seal(KEY_1, 1, SECRET, AAD);
    const error = thrown(() => open(new Map([[1, KEY_2]]), sealed, AAD));
    expect(error).toBeInstanceOf(SealTampered);
    expect(error).toMatchObject({ keyVersion: 1 });
    expect((error as Error).message).toMatch(
      /^The sealed value does not open with the key listed as version 1: either that is not the key it was sealed with/,
    );
  });

  describe("anything but a well-formed sealed value is refused, never read as plaintext", () => {
    const good = seal(KEY_1, 1, SECRET, AAD);
    const cases: Array<[string, unknown]> = [
      ["a plain string", SECRET],
      ["null", null],
      ["an array", [good]],
      ["a number", 42],
      ["another format", { ...good, v: "atrium-seal-2" }],
      ["no format", { kv: 1, nonce: good.nonce, ct: good.ct, tag: good.tag }],
      ["an extra field (a plaintext beside it)", { ...good, value: SECRET }],
      ["a key version of 0", { ...good, kv: 0 }],
      ["a fractional key version", { ...good, kv: 1.5 }],
      ["a key version as text", { ...good, kv: "1" }],
      ["a nonce of 16 bytes", { ...good, nonce: randomBytes(16).toString("base64url") }],
      ["a short tag (GCM would accept 4 bytes)", { ...good, tag: good.tag.slice(0, 6) }],
      ["standard base64 padding", { ...good, tag: Buffer.from(good.tag, "base64url").toString("base64") }],
      ["a ciphertext that is not base64url", { ...good, ct: `${good.ct}!` }],
      ["a ciphertext of a length no encoding has", { ...good, ct: "AAAAA" }],
      ["a missing ciphertext", { v: good.v, kv: good.kv, nonce: good.nonce, tag: good.tag }],
    ];
    it.for(cases)("%s", ([, value]) => {
      const error = thrown(() => open(KEYS, value, AAD));
      expect(error).toBeInstanceOf(MalformedSeal);
      expect((error as Error).message).not.toContain(SECRET);
      expect(thrown(() => sealedKeyVersion(value))).toBeInstanceOf(MalformedSeal);
    });
  });

  it("sealedKeyVersion reads the version of a well-formed value without a key", () => {
    expect(sealedKeyVersion(seal(KEY_2, 2, SECRET, AAD))).toBe(2);
  });

  it("refuses to seal with a key that is not 32 bytes or a version that is not a positive integer", () => {
    expect(() => seal(randomBytes(16), 1, SECRET, AAD)).toThrow(TypeError);
    expect(() => seal(KEY_1, 0, SECRET, AAD)).toThrow(TypeError);
    expect(() => seal(KEY_1, 2.5, SECRET, AAD)).toThrow(TypeError);
  });
});

describe("decodeSealKey", () => {
  const key = randomBytes(32);

  it("reads 32 bytes written as hex, base64 (padded or not) or base64url", () => {
    for (const text of [
      key.toString("hex"),
      key.toString("hex").toUpperCase(),
      key.toString("base64"),
      key.toString("base64").replace(/=+$/, ""),
      key.toString("base64url"),
    ]) {
      expect(decodeSealKey(text)?.equals(key)).toBe(true);
    }
  });

  it.for([
    ["16 bytes of base64", randomBytes(16).toString("base64")],
    ["48 bytes of base64 (openssl rand -base64 48)", randomBytes(48).toString("base64")],
    ["31 bytes of hex", randomBytes(31).toString("hex")],
    ["63 hex characters", key.toString("hex").slice(1)],
    ["a passphrase", "correct horse battery staple, thirty-two+"],
    [
      "base64 with a space inside",
      `${key.toString("base64").slice(0, 20)} ${key.toString("base64").slice(20)}`,
    ],
    ["base64 mixing both alphabets", `+_${key.toString("base64url").slice(2)}`],
    ["the empty string", ""],
  ])("refuses %s", ([, text]) => {
    expect(decodeSealKey(text as string)).toBeUndefined();
  });
});

// Keeps the type import honest: a sealed value is plain JSON and survives a round trip on disk.
it("a sealed value survives JSON and opens after it", () => {
  const stored = JSON.parse(JSON.stringify(seal(KEY_1, 1, SECRET, AAD))) as SealedValue;
  expect(open(KEYS, stored, AAD)).toBe(SECRET);
});
