import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import { loadInstance } from "../../../src/instance/load.ts";

const MINIMAL = {
  auth: { adapter: "dev" },
  storage: { root: "./data" },
  http: { host: "127.0.0.1", port: 8787, publicUrl: "http://127.0.0.1:8787" },
};

/** A key pasted into instance.json itself, where no secret belongs: refused, and never repeated. */
const INLINE_KEY = randomBytes(32).toString("base64");

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-credential-keys-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes each key text to `key-<n>.txt` and an instance.json naming them as file references. */
async function instanceWithKeys(keys: Array<{ version: number; text: string }>): Promise<string> {
  for (const [index, key] of keys.entries()) await writeFile(join(dir, `key-${index}.txt`), key.text);
  const path = join(dir, "instance.json");
  const credentials = {
    keys: keys.map((key, index) => ({ version: key.version, key: { file: `key-${index}.txt` } })),
  };
  await writeFile(path, JSON.stringify({ ...MINIMAL, credentials }));
  return path;
}

async function bootError(load: Promise<unknown>): Promise<string> {
  const error = await load.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BootError);
  return (error as BootError).message;
}

describe("credentials.keys", () => {
  it("without the section there are no keys", async () => {
    const path = join(dir, "instance.json");
    await writeFile(path, JSON.stringify(MINIMAL));
    expect((await loadInstance(path)).credentials).toBeUndefined();
  });

  it("reads each key through its reference (base64 with a newline, as openssl writes it, or hex)", async () => {
    const one = randomBytes(32);
    const two = randomBytes(32);
    const config = await loadInstance(
      await instanceWithKeys([
        { version: 2, text: `${two.toString("hex")}` },
        { version: 1, text: `${one.toString("base64")}\n` },
      ]),
    );
    expect(config.credentials?.newest).toBe(2);
    expect(config.credentials?.keys.get(1)?.equals(one)).toBe(true);
    expect(config.credentials?.keys.get(2)?.equals(two)).toBe(true);
  });

  it("reads a key from an environment variable", async () => {
    const name = `ATRIUM_TEST_CREDENTIAL_KEY_${randomBytes(4).toString("hex")}`;
    const key = randomBytes(32);
    process.env[name] = key.toString("base64");
    try {
      const path = join(dir, "instance.json");
      await writeFile(
        path,
        JSON.stringify({ ...MINIMAL, credentials: { keys: [{ version: 5, key: { env: name } }] } }),
      );
      const config = await loadInstance(path);
      expect(config.credentials?.newest).toBe(5);
      expect(config.credentials?.keys.get(5)?.equals(key)).toBe(true);
    } finally {
      delete process.env[name];
    }
  });

  it.for([
    ["16 bytes", randomBytes(16).toString("base64")],
    ["48 bytes (the session secret's recipe)", randomBytes(48).toString("base64")],
    ["a passphrase", "this is my very secret passphrase!!"],
    ["63 hex characters", randomBytes(32).toString("hex").slice(1)],
  ])("a key of %s is refused by field and version, and its text is never echoed", async ([, text]) => {
    const good = randomBytes(32).toString("base64");
    const message = await bootError(
      loadInstance(
        await instanceWithKeys([
          { version: 1, text: good },
          { version: 2, text: text as string },
        ]),
      ),
    );
    expect(message).toContain("credentials.keys[1].key (version 2)");
    expect(message).toContain("openssl rand -base64 32");
    expect(message).not.toContain(text as string);
    expect(message).not.toContain(good);
  });

  it("two keys with one version are refused, naming the second", async () => {
    const message = await bootError(
      loadInstance(
        await instanceWithKeys([
          { version: 3, text: randomBytes(32).toString("base64") },
          { version: 3, text: randomBytes(32).toString("base64") },
        ]),
      ),
    );
    expect(message).toContain("credentials.keys[1].version is 3");
  });

  it("a missing key file or variable is refused naming the field", async () => {
    const path = join(dir, "instance.json");
    await writeFile(
      path,
      JSON.stringify({ ...MINIMAL, credentials: { keys: [{ version: 1, key: { file: "absent.txt" } }] } }),
    );
    expect(await bootError(loadInstance(path))).toContain("credentials.keys[0].key");
  });

  it.for([
    ["an empty list", { keys: [] }],
    ["version 0", { keys: [{ version: 0, key: { env: "K" } }] }],
    ["a fractional version", { keys: [{ version: 1.5, key: { env: "K" } }] }],
    ["a key written in the file", { keys: [{ version: 1, key: INLINE_KEY }] }],
    ["no keys at all", {}],
    ["an unknown field", { keys: [{ version: 1, key: { env: "K" } }], cipher: "aes-128-cbc" }],
  ])("%s is refused by the schema, naming credentials", async ([, credentials]) => {
    const path = join(dir, "instance.json");
    await writeFile(path, JSON.stringify({ ...MINIMAL, credentials }));
    const message = await bootError(loadInstance(path));
    expect(message).toContain("credentials");
    expect(message).not.toContain(INLINE_KEY);
  });
});
