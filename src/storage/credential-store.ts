import { randomBytes } from "node:crypto";
import {
  open as openSealed,
  SealError,
  type SealedValue,
  type SealFailure,
  type SealKeyRing,
  seal,
  sealedKeyVersion,
} from "../crypto/seal.ts";
import { AtriumError, BootError } from "../errors.ts";
import { KeyedLock } from "./keyed-lock.ts";
import type { StorageLayout } from "./paths.ts";
import { JsonRecords } from "./records.ts";

// The one place secrets a record needs (a connection's static header value, next its OAuth
// tokens) are kept: sealed, one file per credential in `_instance/credentials/`. A record stores
// only the credential's id. The sealed value is bound to (record, field, credential id), so it
// opens only where it was put (ADR 0036).

/** What `_instance/credentials/cred_<24 hex>.json` holds. `recordId` and `field` are the binding. */
export interface StoredCredential {
  id: string;
  recordId: string;
  field: string;
  sealed: SealedValue;
}

const CREDENTIAL_ID = /^cred_[0-9a-f]{24}$/;
// The binding is joined with newlines into the associated data, so neither part may hold one:
// printable ASCII without spaces keeps ("a\nb", "c") and ("a", "b\nc") apart.
const BINDING_PART = /^[\x21-\x7e]{1,256}$/;

export function isCredentialId(value: string): boolean {
  return CREDENTIAL_ID.test(value);
}

/** A fresh credential id, for a record that must name its credential before it is sealed (`put`). */
export function newCredentialId(): string {
  return `cred_${randomBytes(12).toString("hex")}`;
}

/** The credential id names no stored credential. */
export class CredentialNotFound extends Error {
  constructor(readonly credentialId: string) {
    super(`No stored credential ${credentialId}: enter the credential again.`);
    this.name = "CredentialNotFound";
  }
}

export type CredentialRefusal = SealFailure | "bound_elsewhere";

/**
 * A stored credential that does not open: sealed under a key no longer configured, or the key
 * under its version is not the one that sealed it, changed on disk, moved from another record or
 * field, or not a sealed value at all. Answered `503 credential_refused` (an operator's or an
 * admin's fix, like `credentials_unconfigured`), never a 500. The message carries neither the
 * value nor the credential's id (a view never shows one); `credentialId` is for the CLI.
 */
export class CredentialRefused extends AtriumError {
  constructor(
    readonly credentialId: string,
    readonly reason: CredentialRefusal,
    detail: string,
  ) {
    super(
      "credential_refused",
      503,
      `A stored credential is refused. ${detail} If it was changed or moved, an admin enters it ` +
        "again (remove the connection and add it with its value); if the key is wrong, an operator " +
        "puts the right one back in credentials.keys and restarts (docs/configuration.md, Credentials).",
    );
  }
}

/** A credential is to be sealed but instance.json names no key to seal it with. */
export class CredentialKeysMissing extends AtriumError {
  constructor() {
    super(
      "credentials_unconfigured",
      503,
      "This Atrium has no key to seal credentials with: an operator sets credentials.keys in " +
        "instance.json (docs/configuration.md, Credentials) and restarts it.",
    );
  }
}

/**
 * Sealed credentials, a file each. Built by `CredentialStore.open`, which refuses a data root
 * whose sealed values the configured keys cannot open. No method logs a value, and only `open`
 * returns one.
 */
export class CredentialStore {
  private readonly records: JsonRecords<StoredCredential>;
  private readonly locks = new KeyedLock();

  private constructor(
    layout: StorageLayout,
    private readonly keys: SealKeyRing | undefined,
    /** Every stored credential's id and the key version it is sealed under, kept by the writers. */
    private readonly index: Map<string, number>,
  ) {
    this.records = new JsonRecords(layout, "credentials");
  }

  /**
   * Loads the index and checks, before anything is served, that every stored value names a key
   * version `keys` holds and that each listed key is the one its values were sealed with: sealed
   * values and no key, a dropped version, a key that opens none of the values sealed under its
   * version, or a file that is not a credential stop the boot, naming the field, version or file
   * and what to do.
   */
  static async open(layout: StorageLayout, keys: SealKeyRing | undefined): Promise<CredentialStore> {
    const records = new JsonRecords<unknown>(layout, "credentials");
    const index = new Map<string, number>();
    const trial = new KeyTrial(keys);
    for (const id of await records.ids()) {
      const path = layout.collectionFile("credentials", id);
      let stored: StoredCredential;
      let version: number;
      try {
        stored = checkRecord(id, await records.get(id));
        version = sealedKeyVersion(stored.sealed);
      } catch (error) {
        if (!(error instanceof SyntaxError || error instanceof SealError || error instanceof BadRecord)) {
          throw error;
        }
        const what = error instanceof SyntaxError ? "it is not JSON." : (error as Error).message;
        throw new BootError(
          `${path} is not a sealed credential (${what}) Restore it from a backup, or remove it and ` +
            "enter that credential again.",
        );
      }
      index.set(id, version);
      trial.offer(version, stored);
    }
    if (index.size > 0 && !keys) {
      throw new BootError(
        `The data root holds ${index.size} sealed credential(s) and instance.json sets no credentials.keys: ` +
          'name the key they were sealed with, e.g. "credentials": {"keys": [{"version": 1, "key": ' +
          '{"env": "ATRIUM_CREDENTIAL_KEY_1"}}]} (docs/configuration.md, Credentials).',
      );
    }
    const missing = [...new Set(index.values())].filter((version) => !keys?.keys.has(version));
    if (missing.length > 0) {
      const count = [...index.values()].filter((version) => missing.includes(version)).length;
      throw new BootError(
        `${count} stored credential(s) are sealed under key version(s) ${missing.join(", ")}, which ` +
          "credentials.keys does not list: put those keys back, run `atrium credentials reseal`, and " +
          "only then remove them.",
      );
    }
    const [wrong] = trial.unproven();
    if (wrong) {
      throw new BootError(
        `The key credentials.keys lists as version ${wrong.version} opens none of the ${wrong.tried} ` +
          `stored credential(s) sealed under version ${wrong.version}: it is not the key they were ` +
          `sealed with. Put version ${wrong.version}'s original key back (a new key is added under a ` +
          "new, higher version: docs/operations.md, Rotating the credential key); if that is the " +
          "key, those files were changed: restore them from a backup.",
      );
    }
    return new CredentialStore(layout, keys, index);
  }

  /**
   * Seals `value` for `field` of `recordId` under the newest key; returns the new credential's id.
   * `id` is one `newCredentialId` gave a caller that writes the record naming it first, so that no
   * failure or crash between the two leaves a sealed value no record names (a connection's OAuth
   * client registration, registrations.ts).
   */
  async put(recordId: string, field: string, value: string, id = newCredentialId()): Promise<string> {
    if (!isCredentialId(id)) throw new CredentialNotFound(id);
    if (this.index.has(id)) throw new TypeError(`A new credential's id names a stored one (${id}).`);
    await this.write(id, recordId, field, value);
    return id;
  }

  /** Replaces the value of an existing credential, which must be bound to the same record and field. */
  async replace(id: string, recordId: string, field: string, value: string): Promise<void> {
    await this.locks.run(id, async () => {
      const stored = await this.read(id);
      if (stored.recordId !== recordId || stored.field !== field) {
        throw new CredentialRefused(id, "bound_elsewhere", "It belongs to another record or field.");
      }
      await this.write(id, recordId, field, value);
    });
  }

  /** The value of credential `id`, which opens only for the record and field it was put for. */
  async open(id: string, recordId: string, field: string): Promise<string> {
    checkBinding(recordId, field);
    // The binding comes from the caller, never from the file: a file edited to name another
    // record still carries a value sealed for its first one, and does not open.
    const stored = await this.read(id);
    try {
      return openSealed(this.keys?.keys ?? new Map(), stored.sealed, associatedData(recordId, field, id));
    } catch (error) {
      if (error instanceof SealError) throw new CredentialRefused(id, error.reason, error.message);
      throw error;
    }
  }

  /** Removes a credential; removing one that is not there does nothing. */
  async delete(id: string): Promise<void> {
    if (!isCredentialId(id)) throw new CredentialNotFound(id);
    await this.locks.run(id, async () => {
      await this.records.delete(id);
      this.index.delete(id);
    });
  }

  /**
   * Removes a credential only if it is sealed for record `recordId`: a record copied or edited to
   * name another record's credential never removes it (an archive's release, ADR 0142). Answers
   * `absent` for one not there, as `delete` removes nothing then.
   */
  async deleteBoundTo(id: string, recordId: string): Promise<"removed" | "absent" | "bound_elsewhere"> {
    if (!isCredentialId(id)) throw new CredentialNotFound(id);
    return this.locks.run(id, async () => {
      let stored: StoredCredential;
      try {
        stored = await this.read(id);
      } catch (error) {
        if (error instanceof CredentialNotFound) return "absent";
        throw error;
      }
      if (stored.recordId !== recordId) return "bound_elsewhere";
      await this.records.delete(id);
      this.index.delete(id);
      return "removed";
    });
  }

  /** How many credentials are stored. */
  count(): number {
    return this.index.size;
  }

  /** How many stored credentials are sealed under a key older than the newest. */
  staleCount(): number {
    const newest = this.keys?.newest;
    return [...this.index.values()].filter((version) => version !== newest).length;
  }

  /**
   * Re-seals every credential not yet under the newest key with it, each file replaced atomically
   * on its own; returns how many it re-sealed (0 when run again). A credential that does not open
   * stops it, named, with those before it already re-sealed. `mayWrite` is asked before each
   * credential it would re-seal; false stops it there, with those before it done and the rest
   * left under their older key (`staleCount`): the CLI asks whether it still holds the root's lock.
   */
  async resealAll(mayWrite: () => Promise<boolean> = async () => true): Promise<number> {
    let resealed = 0;
    for (const id of [...this.index.keys()]) {
      if (this.index.get(id) === this.keys?.newest) continue;
      if (!(await mayWrite())) break;
      const moved = await this.locks.run(id, async () => {
        // The index is current: boot read every file, and only this process (it holds the
        // instance lock) writes them.
        if (!this.index.has(id) || this.index.get(id) === this.keys?.newest) return false;
        const stored = await this.read(id);
        const value = await this.open(id, stored.recordId, stored.field);
        await this.write(id, stored.recordId, stored.field, value);
        return true;
      });
      if (moved) resealed += 1;
    }
    return resealed;
  }

  private async write(id: string, recordId: string, field: string, value: string): Promise<void> {
    checkBinding(recordId, field);
    if (!this.keys) throw new CredentialKeysMissing();
    const key = this.keys.keys.get(this.keys.newest) as Buffer;
    const sealed = seal(key, this.keys.newest, value, associatedData(recordId, field, id));
    await this.records.put(id, { id, recordId, field, sealed });
    this.index.set(id, this.keys.newest);
  }

  private async read(id: string): Promise<StoredCredential> {
    if (!isCredentialId(id)) throw new CredentialNotFound(id);
    let raw: unknown;
    try {
      raw = await this.records.get(id);
    } catch (error) {
      if (error instanceof SyntaxError) throw new CredentialRefused(id, "malformed", "Its file is not JSON.");
      throw error;
    }
    if (raw === undefined) throw new CredentialNotFound(id);
    try {
      return checkRecord(id, raw);
    } catch (error) {
      if (error instanceof BadRecord)
        throw new CredentialRefused(id, "malformed", `Its file is not a credential: ${error.message}`);
      throw error;
    }
  }
}

/** Where a sealed value belongs: it opens only with the same record, field and credential id. */
function associatedData(recordId: string, field: string, id: string): string {
  return `${recordId}\n${field}\n${id}`;
}

function checkBinding(recordId: string, field: string): void {
  if (!BINDING_PART.test(recordId) || !BINDING_PART.test(field)) {
    throw new TypeError(
      "A credential's record id and field are 1–256 printable ASCII characters without spaces.",
    );
  }
}

class BadRecord extends Error {}

/**
 * Proves each configured key against the values sealed under its version, at boot: one value
 * that opens proves the key (GCM never verifies under another), so a right key costs one
 * decryption per version; a wrong one is tried against every value under it (each a few
 * microseconds), so one changed file never passes for a wrong key, nor the reverse.
 */
class KeyTrial {
  private readonly proven = new Set<number>();
  private readonly refused = new Map<number, number>();

  constructor(private readonly keys: SealKeyRing | undefined) {}

  offer(version: number, stored: StoredCredential): void {
    const key = this.keys?.keys.get(version);
    if (!key || this.proven.has(version)) return;
    try {
      openSealed(
        new Map([[version, key]]),
        stored.sealed,
        associatedData(stored.recordId, stored.field, stored.id),
      );
      this.proven.add(version);
      this.refused.delete(version);
    } catch (error) {
      if (!(error instanceof SealError)) throw error;
      this.refused.set(version, (this.refused.get(version) ?? 0) + 1);
    }
  }

  /** The versions none of whose values opened, with how many were tried. */
  unproven(): { version: number; tried: number }[] {
    return [...this.refused].map(([version, tried]) => ({ version, tried }));
  }
}

/** The record's shape; the sealed value itself is checked by the opener, field by field. */
function checkRecord(id: string, raw: unknown): StoredCredential {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new BadRecord("it is not an object.");
  const record = raw as Record<string, unknown>;
  if (record.id !== id) throw new BadRecord("its id is not its file's name.");
  if (typeof record.recordId !== "string" || !BINDING_PART.test(record.recordId)) {
    throw new BadRecord("its recordId is missing or malformed.");
  }
  if (typeof record.field !== "string" || !BINDING_PART.test(record.field)) {
    throw new BadRecord("its field is missing or malformed.");
  }
  if (!("sealed" in record)) throw new BadRecord("it holds no sealed value.");
  return record as unknown as StoredCredential;
}
