import { basename } from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { BootError } from "../errors.ts";
import { MAX_ACCESS_TOKEN_TTL_SECONDS } from "../instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS, type Clock, systemClock } from "../kernel/clock.ts";
import { createFolderExclusive } from "../storage/exclusive.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";

export const SIGNING_ALG = "ES256";

/** One key on disk (`oauth/keys/<kid>.json`, mode 0600). Times are epoch milliseconds. */
interface StoredKey {
  kid: string;
  privateJwk: JWK;
  createdAt: number;
  retiredAt?: number;
  /**
   * The longest access-token lifetime, in seconds, of any process that signed with this key:
   * written when the key is made and raised at a boot configured longer. Absent on a key made
   * before it was recorded: unknown, judged as MAX_ACCESS_TOKEN_TTL_SECONDS.
   */
  tokenTtlSeconds?: number;
  /**
   * Written when the key is retired: the instant the last token it can have signed expires
   * (`retiredAt` plus `tokenTtlSeconds`). Absent on a key retired before it was recorded.
   */
  tokensUntil?: number;
}

type RetiredKey = StoredKey & { retiredAt: number };

/** A loaded key: what signs, and what verifies. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
  createdAt: number;
  retiredAt?: number;
}

/**
 * The instance's access-token signing keys. The newest signs; every key still held
 * verifies, so tokens signed before a rotation stay valid until they expire, and a key is
 * deleted only once every token it signed has expired — judged by the lifetimes it signed under,
 * recorded on it, never by this process's: a TTL lowered since shortens nothing
 * (test/unit/oauth/keys-kept-for-tokens-signed-under-a-longer-ttl.test.ts).
 */
export class SigningKeys {
  private readonly records: JsonRecords<StoredKey>;
  private readonly lock = new KeyedLock();
  private readonly stored = new Map<string, StoredKey>();
  /** Newest first. Replaced whole, so a reader never sees a half-rotated set. */
  private keys: SigningKey[] = [];

  constructor(
    private readonly layout: StorageLayout,
    /** The lifetime of the access tokens this process signs (`oauth.accessTokenTtlSeconds`). */
    private readonly accessTokenTtlSeconds: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new JsonRecords(layout, "oauth/keys");
  }

  /** Reads every stored key; makes the first one when there are none. Called once at boot. */
  async load(): Promise<void> {
    let loaded = await this.readAll();
    if (loaded.length === 0) loaded = await this.createFirst();
    this.keys = newestFirst(loaded);
    await this.recordTtlOfCurrent();
  }

  /** Before this process signs anything, the current key learns a longer lifetime it will sign under. */
  private async recordTtlOfCurrent(): Promise<void> {
    const current = this.stored.get(this.current().kid);
    if (current?.tokenTtlSeconds === undefined || current.tokenTtlSeconds >= this.accessTokenTtlSeconds)
      return;
    const raised = { ...current, tokenTtlSeconds: this.accessTokenTtlSeconds };
    await this.records.put(raised.kid, raised);
    this.stored.set(raised.kid, raised);
  }

  private async readAll(): Promise<SigningKey[]> {
    const loaded: SigningKey[] = [];
    for (const id of await this.records.ids()) {
      const stored = await this.records.get(id).catch((error: unknown) => {
        // Guessing would either drop a key that still verifies tokens or sign with a broken one.
        throw new BootError(
          `The OAuth signing key ${this.layout.collectionFile("oauth/keys", id)} cannot be read (${(error as Error).message}); restore it or move it out.`,
        );
      });
      if (!stored) continue;
      this.stored.set(stored.kid, stored);
      loaded.push(await fromStored(stored));
    }
    return loaded;
  }

  /**
   * The first key is created exclusively: the keys folder is published whole with it, and only
   * if no key is there yet. Two processes booting on a fresh root (or a later replica) end with
   * one key, and the loser loads the winner's (test/unit/oauth/keys.test.ts "racing").
   */
  private async createFirst(): Promise<SigningKey[]> {
    const stored = await this.newKey();
    const file = basename(this.layout.collectionFile("oauth/keys", stored.kid));
    if (
      await createFolderExclusive(this.layout.collectionDir("oauth/keys"), {
        [file]: `${JSON.stringify(stored, null, 2)}\n`,
      })
    ) {
      this.stored.set(stored.kid, stored);
      return [await fromStored(stored)];
    }
    const winners = await this.readAll();
    if (winners.length > 0) return winners;
    // The folder holds only a crashed writer's leftovers: nobody is racing for it (the
    // instance lock is held), so the key is written the ordinary way.
    return [await this.generate()];
  }

  /** The key new tokens are signed with. */
  current(): SigningKey {
    const key = this.keys[0];
    if (!key) throw new Error("SigningKeys.current() before load(): no key is loaded.");
    return key;
  }

  /** The public key with this kid, if it is still held. */
  find(kid: string): SigningKey | undefined {
    return this.keys.find((key) => key.kid === kid);
  }

  /** The public JWKS: every key still held, private parts stripped. */
  jwks(): { keys: JWK[] } {
    return { keys: this.keys.map((key) => key.publicJwk) };
  }

  /**
   * Makes a new current key and retires the previous one now, recording when its last token
   * expires. Keys whose last token expired (plus the clock tolerance) are deleted: nothing they
   * signed is still accepted.
   */
  rotate(): Promise<SigningKey> {
    return this.lock.run("rotate", async () => {
      const now = this.clock();
      const fresh = await this.generate();
      const kept: SigningKey[] = [fresh];
      for (const key of this.keys) {
        const stored = this.storedKey(key.kid);
        const retired =
          stored.retiredAt === undefined
            ? await this.retire(stored, now)
            : { ...stored, retiredAt: stored.retiredAt };
        if (lastTokenExpiry(retired) + CLOCK_TOLERANCE_SECONDS * 1000 < now) {
          await this.records.delete(key.kid);
          this.stored.delete(key.kid);
          continue;
        }
        kept.push({ ...key, retiredAt: retired.retiredAt });
      }
      this.keys = kept;
      return fresh;
    });
  }

  /** Retires a key now: its last token expires after the longest lifetime it signed under. */
  private async retire(stored: StoredKey, now: number): Promise<RetiredKey> {
    const lifetimeSeconds = stored.tokenTtlSeconds ?? MAX_ACCESS_TOKEN_TTL_SECONDS;
    const retired = { ...stored, retiredAt: now, tokensUntil: now + lifetimeSeconds * 1000 };
    await this.records.put(retired.kid, retired);
    this.stored.set(retired.kid, retired);
    return retired;
  }

  private storedKey(kid: string): StoredKey {
    const stored = this.stored.get(kid);
    if (!stored) throw new Error(`The signing key ${kid} is loaded but its record is not held.`);
    return stored;
  }

  private async newKey(): Promise<StoredKey> {
    const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const privateJwk = await exportJWK(privateKey);
    return {
      kid: await calculateJwkThumbprint(publicPart(privateJwk)),
      privateJwk,
      createdAt: this.clock(),
      tokenTtlSeconds: this.accessTokenTtlSeconds,
    };
  }

  private async generate(): Promise<SigningKey> {
    const stored = await this.newKey();
    await this.records.put(stored.kid, stored);
    this.stored.set(stored.kid, stored);
    return fromStored(stored);
  }
}

async function fromStored(stored: StoredKey): Promise<SigningKey> {
  const publicJwk: JWK = { ...publicPart(stored.privateJwk), kid: stored.kid, alg: SIGNING_ALG, use: "sig" };
  const key: SigningKey = {
    kid: stored.kid,
    privateKey: (await importJWK({ ...stored.privateJwk, alg: SIGNING_ALG }, SIGNING_ALG)) as CryptoKey,
    publicKey: (await importJWK(publicJwk, SIGNING_ALG)) as CryptoKey,
    publicJwk,
    createdAt: stored.createdAt,
  };
  if (stored.retiredAt !== undefined) key.retiredAt = stored.retiredAt;
  return key;
}

/**
 * When the last token a retired key can have signed expires. A key retired before that was
 * recorded is judged by the longest lifetime allowed: the lifetime it signed under is unknown.
 */
function lastTokenExpiry(retired: RetiredKey): number {
  return retired.tokensUntil ?? retired.retiredAt + MAX_ACCESS_TOKEN_TTL_SECONDS * 1000;
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y } = jwk;
  return { kty, crv, x, y };
}

/** The one unretired key first, then the rest newest first. */
function newestFirst(keys: SigningKey[]): SigningKey[] {
  const rank = (key: SigningKey) => (key.retiredAt === undefined ? 0 : 1);
  return [...keys].sort(
    (a, b) => rank(a) - rank(b) || b.createdAt - a.createdAt || a.kid.localeCompare(b.kid),
  );
}
