import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SealKeyRing } from "../../../src/crypto/seal.ts";
import { BootError } from "../../../src/errors.ts";
import {
  CredentialKeysMissing,
  CredentialNotFound,
  CredentialRefused,
  CredentialStore,
  newCredentialId,
  type StoredCredential,
} from "../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

const KEYS = new Map([
  [1, randomBytes(32)],
  [2, randomBytes(32)],
  [3, randomBytes(32)],
]);
/** A key ring holding the given versions of KEYS; the highest is the newest. */
function ring(...versions: number[]): SealKeyRing {
  return {
    keys: new Map(versions.map((v) => [v, KEYS.get(v) as Buffer])),
    newest: Math.max(...versions),
  };
}

const RECORD = "cn_0123456789abcdef";
const OTHER_RECORD = "cn_fedcba9876543210";
const FIELD = "auth.value";
const SECRET = "sk-live-0123456789-never-logged";

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-credentials-"));
  layout = new StorageLayout(root);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const fileOf = (id: string) => layout.collectionFile("credentials", id);

async function readStored(id: string): Promise<StoredCredential> {
  return JSON.parse(await readFile(fileOf(id), "utf8")) as StoredCredential;
}

async function writeStored(id: string, value: unknown): Promise<void> {
  await writeFile(fileOf(id), typeof value === "string" ? value : JSON.stringify(value));
}

async function refusal(work: Promise<unknown>): Promise<CredentialRefused> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CredentialRefused);
  expect((error as Error).message).not.toContain(SECRET);
  return error as CredentialRefused;
}

async function bootError(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BootError);
  return (error as BootError).message;
}

describe("CredentialStore", () => {
  it("puts a value sealed under the newest key, in a 0600 file that holds no trace of it", async () => {
    const store = await CredentialStore.open(layout, ring(1, 2));
    const id = await store.put(RECORD, FIELD, SECRET);
    expect(id).toMatch(/^cred_[0-9a-f]{24}$/);
    const stored = await readStored(id);
    expect(stored).toMatchObject({
      id,
      recordId: RECORD,
      field: FIELD,
      sealed: { v: "atrium-seal-1", kv: 2 },
    });
    const text = await readFile(fileOf(id), "utf8");
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(Buffer.from(SECRET).toString("base64"));
    expect((await stat(fileOf(id))).mode & 0o777).toBe(0o600);
    expect(await store.open(id, RECORD, FIELD)).toBe(SECRET);
    expect(store.count()).toBe(1);
  });

  it("gives every credential its own id, even for one record and field", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const a = await store.put(RECORD, FIELD, SECRET);
    const b = await store.put(RECORD, FIELD, SECRET);
    expect(a).not.toBe(b);
    expect(store.count()).toBe(2);
  });

  it("puts under an id chosen beforehand (a record that names it is written first), never over a stored one", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = newCredentialId();
    expect(await store.put(RECORD, FIELD, SECRET, id)).toBe(id);
    expect(await store.open(id, RECORD, FIELD)).toBe(SECRET);
    await expect(store.put(OTHER_RECORD, FIELD, "other", id)).rejects.toThrow(/names a stored one/);
    await expect(store.put(RECORD, FIELD, SECRET, "../escape")).rejects.toBeInstanceOf(CredentialNotFound);
    expect(await store.open(id, RECORD, FIELD)).toBe(SECRET);
    expect(store.count()).toBe(1);
  });

  it("a value opens only for the record and field it was put for", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    expect((await refusal(store.open(id, OTHER_RECORD, FIELD))).reason).toBe("tampered");
    expect((await refusal(store.open(id, RECORD, "auth.header"))).reason).toBe("tampered");
  });

  it("a sealed value moved to another record's file, or relabelled on disk, is refused", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const mine = await store.put(RECORD, FIELD, SECRET);
    const theirs = await store.put(OTHER_RECORD, FIELD, "their-own-secret");
    // Copied into the other record's credential, its file's binding kept.
    const target = await readStored(theirs);
    await writeStored(theirs, { ...target, sealed: (await readStored(mine)).sealed });
    expect((await refusal(store.open(theirs, OTHER_RECORD, FIELD))).reason).toBe("tampered");
    // The file edited to claim the other record: the value was sealed for this one.
    await writeStored(mine, { ...(await readStored(mine)), recordId: OTHER_RECORD });
    expect((await refusal(store.open(mine, OTHER_RECORD, FIELD))).reason).toBe("tampered");
  });

  it("the same record and field under another credential id is refused (the id is bound too)", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const a = await store.put(RECORD, FIELD, SECRET);
    const b = await store.put(RECORD, FIELD, "another");
    await writeStored(b, { ...(await readStored(b)), sealed: (await readStored(a)).sealed });
    expect((await refusal(store.open(b, RECORD, FIELD))).reason).toBe("tampered");
  });

  it.for(["ct", "tag", "nonce"] as const)("a changed %s on disk is refused", async (field) => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    const stored = await readStored(id);
    const bytes = Buffer.from(stored.sealed[field], "base64url");
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0x80;
    await writeStored(id, { ...stored, sealed: { ...stored.sealed, [field]: bytes.toString("base64url") } });
    const error = await refusal(store.open(id, RECORD, FIELD));
    expect(error.reason).toBe("tampered");
    expect(error.credentialId).toBe(id);
  });

  it("a value claiming a key version that is not configured is refused, naming the version", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    const stored = await readStored(id);
    await writeStored(id, { ...stored, sealed: { ...stored.sealed, kv: 9 } });
    const error = await refusal(store.open(id, RECORD, FIELD));
    expect(error.reason).toBe("unknown_key_version");
    expect(error.message).toContain("key version 9");
  });

  describe("a file that is not a sealed credential is refused, never read as plaintext", () => {
    const cases: Array<[string, (stored: StoredCredential) => unknown]> = [
      ["not JSON", () => "{ not json"],
      ["a plaintext where the sealed value goes", (s) => ({ ...s, sealed: SECRET })],
      [
        "a sealed value of another format",
        (s) => ({ ...s, sealed: { ...s.sealed, v: "plain", value: SECRET } }),
      ],
      ["no sealed value", ({ sealed: _sealed, ...rest }) => rest],
      ["another credential's id inside", (s) => ({ ...s, id: "cred_000000000000000000000000" })],
      ["a JSON array", () => []],
    ];
    it.for(cases)("%s", async ([, corrupt]) => {
      const store = await CredentialStore.open(layout, ring(1));
      const id = await store.put(RECORD, FIELD, SECRET);
      await writeStored(id, corrupt(await readStored(id)));
      expect((await refusal(store.open(id, RECORD, FIELD))).reason).toBe("malformed");
      // …and a restart on it stops, naming the file, not what is in it.
      const message = await bootError(CredentialStore.open(layout, ring(1)));
      expect(message).toContain(fileOf(id));
      expect(message).not.toContain(SECRET);
    });
  });

  it("replace re-seals a new value in place; only for the record and field it is bound to", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    const before = await readStored(id);
    await store.replace(id, RECORD, FIELD, "rotated-upstream-key");
    expect(await store.open(id, RECORD, FIELD)).toBe("rotated-upstream-key");
    expect((await readStored(id)).sealed.nonce).not.toBe(before.sealed.nonce);
    expect((await refusal(store.replace(id, OTHER_RECORD, FIELD, "x"))).reason).toBe("bound_elsewhere");
    expect(await store.open(id, RECORD, FIELD)).toBe("rotated-upstream-key");
    await expect(store.replace("cred_000000000000000000000000", RECORD, FIELD, "x")).rejects.toBeInstanceOf(
      CredentialNotFound,
    );
    expect(store.count()).toBe(1);
  });

  it("delete removes the credential; opening it then is not found; deleting twice is harmless", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    await store.delete(id);
    await store.delete(id);
    expect(store.count()).toBe(0);
    await expect(store.open(id, RECORD, FIELD)).rejects.toBeInstanceOf(CredentialNotFound);
    expect(await readdir(layout.collectionDir("credentials"))).toEqual([]);
  });

  it("deleteBoundTo removes a credential only for the record it is sealed for (an archive's release)", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    const id = await store.put(RECORD, FIELD, SECRET);
    expect(await store.deleteBoundTo(id, OTHER_RECORD)).toBe("bound_elsewhere");
    expect(await store.open(id, RECORD, FIELD)).toBe(SECRET);
    expect(await store.deleteBoundTo(id, RECORD)).toBe("removed");
    expect(await store.deleteBoundTo(id, RECORD)).toBe("absent");
    expect(store.count()).toBe(0);
    expect(await readdir(layout.collectionDir("credentials"))).toEqual([]);
  });

  it("an id that is not a credential id, or a binding with a newline, is refused before any file is read", async () => {
    const store = await CredentialStore.open(layout, ring(1));
    for (const id of ["../sessions/x", "cred_XYZ", "", "cred_0123456789abcdef0123456"]) {
      await expect(store.open(id, RECORD, FIELD)).rejects.toBeInstanceOf(CredentialNotFound);
      await expect(store.delete(id)).rejects.toBeInstanceOf(CredentialNotFound);
    }
    // ("a\nb", "c") and ("a", "b\nc") would join to the same associated data.
    await expect(store.put(`${RECORD}\nauth`, "value", SECRET)).rejects.toThrow(TypeError);
    await expect(store.put(RECORD, "", SECRET)).rejects.toThrow(TypeError);
    expect(store.count()).toBe(0);
  });

  describe("keys at boot", () => {
    it("an empty root opens without keys, and refuses to seal until a key is configured", async () => {
      const store = await CredentialStore.open(layout, undefined);
      expect(store.count()).toBe(0);
      const error = await store.put(RECORD, FIELD, SECRET).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CredentialKeysMissing);
      expect((error as Error).message).toContain("credentials.keys");
    });

    it("a root holding sealed values with no key configured refuses to start, naming credentials.keys", async () => {
      const store = await CredentialStore.open(layout, ring(1));
      await store.put(RECORD, FIELD, SECRET);
      const message = await bootError(CredentialStore.open(layout, undefined));
      expect(message).toContain("credentials.keys");
      expect(message).toContain("1 sealed credential");
    });

    it("a root holding values sealed under a version no longer configured refuses to start", async () => {
      const store = await CredentialStore.open(layout, ring(1));
      await store.put(RECORD, FIELD, SECRET);
      const message = await bootError(CredentialStore.open(layout, ring(2)));
      expect(message).toContain("key version(s) 1");
      expect(message).toContain("atrium credentials reseal");
    });

    it("a key listed under a version that opens none of its values refuses to start, naming the version", async () => {
      const store = await CredentialStore.open(layout, ring(1));
      await store.put(RECORD, FIELD, SECRET);
      await store.put(OTHER_RECORD, FIELD, SECRET);
      // Key 2 put where version 1's was kept: step 1 of a rotation, misread.
      const wrong = { keys: new Map([[1, KEYS.get(2) as Buffer]]), newest: 1 };
      const message = await bootError(CredentialStore.open(layout, wrong));
      expect(message).toContain("version 1 opens none of the 2 stored credential(s)");
      expect(message).toContain("original key back");
      expect(message).not.toContain(SECRET);
    });

    it("one changed value does not pass for a wrong key: another value proves the key, and the start goes on", async () => {
      const store = await CredentialStore.open(layout, ring(1));
      const changed = await store.put(RECORD, FIELD, SECRET);
      await store.put(OTHER_RECORD, FIELD, SECRET);
      const stored = await readStored(changed);
      const ct = Buffer.from(stored.sealed.ct, "base64url");
      ct[0] = (ct[0] as number) ^ 1;
      await writeStored(changed, { ...stored, sealed: { ...stored.sealed, ct: ct.toString("base64url") } });
      const reopened = await CredentialStore.open(layout, ring(1));
      expect(reopened.count()).toBe(2);
      const error = await refusal(reopened.open(changed, RECORD, FIELD));
      expect(error.reason).toBe("tampered");
      expect(error.message).toContain("key listed as version 1");
    });

    it("a writer's temp file left in the folder is not a credential", async () => {
      const store = await CredentialStore.open(layout, ring(1));
      await store.put(RECORD, FIELD, SECRET);
      await writeFile(join(layout.collectionDir("credentials"), ".tmp-cred_x.json-abc"), "half");
      expect((await CredentialStore.open(layout, ring(1))).count()).toBe(1);
    });
  });

  describe("rotation", () => {
    it("old values open, new ones use the newest key, resealAll moves all, then the old key can go", async () => {
      const v1 = await CredentialStore.open(layout, ring(1));
      const old = await v1.put(RECORD, FIELD, SECRET);
      const oldToo = await v1.put(OTHER_RECORD, "oauth.refreshToken", "refresh-1");

      const v2 = await CredentialStore.open(layout, ring(1, 2));
      expect(await v2.open(old, RECORD, FIELD)).toBe(SECRET);
      const fresh = await v2.put(RECORD, "auth.header", "new-secret");
      expect((await readStored(fresh)).sealed.kv).toBe(2);
      expect(v2.staleCount()).toBe(2);

      expect(await v2.resealAll()).toBe(2);
      for (const id of [old, oldToo, fresh]) expect((await readStored(id)).sealed.kv).toBe(2);
      expect(v2.staleCount()).toBe(0);
      // Idempotent: nothing is left to move, and nothing is rewritten.
      const untouched = await readStored(old);
      expect(await v2.resealAll()).toBe(0);
      expect(await readStored(old)).toEqual(untouched);

      const only2 = await CredentialStore.open(layout, ring(2));
      expect(await only2.open(old, RECORD, FIELD)).toBe(SECRET);
      expect(await only2.open(oldToo, OTHER_RECORD, "oauth.refreshToken")).toBe("refresh-1");
      expect(await only2.open(fresh, RECORD, "auth.header")).toBe("new-secret");
    });

    it("re-seals across several old versions, and a re-sealed value keeps its binding", async () => {
      const a = await (await CredentialStore.open(layout, ring(1))).put(RECORD, FIELD, "a");
      const b = await (await CredentialStore.open(layout, ring(1, 2))).put(RECORD, FIELD, "b");
      const store = await CredentialStore.open(layout, ring(1, 2, 3));
      expect(await store.resealAll()).toBe(2);
      const only3 = await CredentialStore.open(layout, ring(3));
      expect(await only3.open(a, RECORD, FIELD)).toBe("a");
      expect(await only3.open(b, RECORD, FIELD)).toBe("b");
      expect((await refusal(only3.open(a, OTHER_RECORD, FIELD))).reason).toBe("tampered");
    });

    it("a value that does not open stops resealAll, named, with the ones before it done", async () => {
      const v1 = await CredentialStore.open(layout, ring(1));
      const id = await v1.put(RECORD, FIELD, SECRET);
      const v2 = await CredentialStore.open(layout, ring(1, 2));
      const stored = await readStored(id);
      const ct = Buffer.from(stored.sealed.ct, "base64url");
      ct[0] = (ct[0] as number) ^ 1;
      await writeStored(id, { ...stored, sealed: { ...stored.sealed, ct: ct.toString("base64url") } });
      const error = await refusal(v2.resealAll());
      expect(error.credentialId).toBe(id);
      expect((await readStored(id)).sealed.kv).toBe(1);
    });
  });
});
