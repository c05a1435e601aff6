import { mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { ACCESS_TTL_SECONDS, type TestClock, tempInstance, testClock } from "./fixtures.ts";

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clock = testClock();
});

afterEach(() => cleanup());

async function keyFiles(): Promise<string[]> {
  return (await readdir(layout.collectionDir("oauth/keys"))).filter((name) => !name.startsWith("."));
}

describe("SigningKeys", () => {
  it("makes one ES256 key on first boot, private file 0600, and the next boot loads the same key", async () => {
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    const kid = keys.current().kid;
    expect(await keyFiles()).toEqual([`${kid}.json`]);
    const mode = (await stat(layout.collectionFile("oauth/keys", kid))).mode & 0o777;
    expect(mode).toBe(0o600);

    const reloaded = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await reloaded.load();
    expect(reloaded.current().kid).toBe(kid);
  });

  it("publishes public keys only, with kid, alg and use", async () => {
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    const [jwk, ...rest] = keys.jwks().keys;
    expect(rest).toEqual([]);
    expect(jwk).toMatchObject({ kty: "EC", crv: "P-256", kid: keys.current().kid, alg: "ES256", use: "sig" });
    expect(jwk).not.toHaveProperty("d");
  });

  it("rotation makes a new current key and keeps the previous one verifying until its tokens expire", async () => {
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    const first = keys.current().kid;
    const second = (await keys.rotate()).kid;
    expect(second).not.toBe(first);
    expect(keys.current().kid).toBe(second);
    expect(keys.jwks().keys.map((key) => key.kid)).toEqual([second, first]);
    expect(keys.find(first)?.retiredAt).toBe(clock());

    // Persisted: a reload still signs with the new key and still knows the retired one.
    const reloaded = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await reloaded.load();
    expect(reloaded.current().kid).toBe(second);
    expect(reloaded.find(first)).toBeDefined();
  });

  it("a rotation deletes keys retired longer ago than an access token lives", async () => {
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    const first = keys.current().kid;
    const second = (await keys.rotate()).kid;
    clock.advance(ACCESS_TTL_SECONDS * 1000); // within TTL + tolerance: kept
    const third = (await keys.rotate()).kid;
    expect(keys.jwks().keys.map((key) => key.kid)).toEqual([third, second, first]);
    clock.advance(120_000);
    const fourth = (await keys.rotate()).kid;
    expect(keys.jwks().keys.map((key) => key.kid)).toEqual([fourth, third, second]);
    expect(await keyFiles()).not.toContain(`${first}.json`);
    expect(await keyFiles()).toHaveLength(3);
  });
});

describe("SigningKeys at boot", () => {
  it("stops boot naming an unreadable key file rather than guessing", async () => {
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    const file = layout.collectionFile("oauth/keys", keys.current().kid);
    await writeFile(file, "{ not json");
    await expect(new SigningKeys(layout, ACCESS_TTL_SECONDS, clock).load()).rejects.toThrow(BootError);
    await expect(new SigningKeys(layout, ACCESS_TTL_SECONDS, clock).load()).rejects.toThrow(file);
  });
});

describe("SigningKeys on a fresh root", () => {
  it("racing: two boots at once make one signing key, and both sign with it", async () => {
    const racers = Array.from({ length: 4 }, () => new SigningKeys(layout, ACCESS_TTL_SECONDS, clock));
    await Promise.all(racers.map((keys) => keys.load()));
    const kids = new Set(racers.map((keys) => keys.current().kid));
    expect(kids.size).toBe(1);
    expect(await keyFiles()).toEqual([`${[...kids][0]}.json`]);
    // Nothing staged is left beside the keys folder.
    expect(
      (await readdir(dirname(layout.collectionDir("oauth/keys")))).filter((n) => n.startsWith(".")),
    ).toEqual([]);
  });

  it("a keys folder holding only a crashed writer's temp file still gets a first key", async () => {
    await mkdir(layout.collectionDir("oauth/keys"), { recursive: true });
    await writeFile(join(layout.collectionDir("oauth/keys"), ".tmp-left-over"), "{");
    const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
    await keys.load();
    expect(await keyFiles()).toEqual([`${keys.current().kid}.json`]);
  });
});
