import { randomBytes } from "node:crypto";
import { equalSecrets, hashSecret, randomSecret } from "../crypto/secrets.ts";
import { type Clock, isWithin } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { CorruptJson } from "../storage/atomic.ts";
import { KeyedLock } from "../storage/keyed-lock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import type { ClientMetadataDocuments } from "./client-metadata.ts";
import { isClientMetadataUrl } from "./client-metadata.ts";
import { type ClientAuthMethod, checkClientMetadata } from "./client-rules.ts";
import { OAuthError } from "./oauth-error.ts";
import type { OAuthClientInformationFull } from "./oauth-types.ts";
import type { UnusedClientCap } from "./unused-client-cap.ts";

const CLIENT_ID = /^atc_[0-9a-f]{32}$/;
const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * How long a registered client with no live grant is kept after its registration or its last
 * authenticated use (ADR 0137; a lookup is not a use, ADR 0156's amendment).
 */
export const UNUSED_CLIENT_KEPT_MS = 30 * DAY_MS;
/** A use is written at most this often, so a busy client costs a write a day, not one a request. */
const CLIENT_USE_RECORDED_EVERY_MS = DAY_MS;
/** How often a full cap on unused clients is logged while registrations are refused by it. */
const CAP_FULL_REPORTED_EVERY_MS = 60 * 60 * 1000;

/** A registered client on disk: what it registered, its secret only as a hash, and its last use. */
interface StoredClient {
  client: OAuthClientInformationFull;
  clientSecretHash?: string;
  /**
   * When it registered or was last used by someone who proved something (`recordUse`: a consent
   * given for it, a refresh token it redeemed), epoch ms, to within
   * CLIENT_USE_RECORDED_EVERY_MS. Never a mere lookup, which anyone can make. Absent in records
   * written before clients were swept: the first sweep that meets one starts its clock, as it
   * does for a value that is not a time (`lastUseOf`).
   */
  lastUsedAt?: unknown;
}

/** What a request presented at the token or revocation endpoint to prove it is the client. */
export interface PresentedClientAuth {
  method: ClientAuthMethod;
  secret?: string;
}

/**
 * Clients: those that registered here (RFC 7591), stored in `oauth/clients`, and those
 * named by a client metadata document URL, fetched on demand. A confidential client's
 * secret is returned once, at registration, and stored only as its SHA-256. A registered
 * client unused for UNUSED_CLIENT_KEPT_MS that holds no live grant is deleted by housekeeping
 * (`sweep`, ADR 0137); registration is open, and nothing else would ever remove one.
 */
export class ClientRegistry {
  private readonly records: JsonRecords<unknown>;
  // A use being recorded and a sweep decide on the record under the client's key, so one always
  // sees the other (test/unit/oauth/clients-sweep.test.ts "a sweep racing a use").
  private readonly locks = new KeyedLock();
  // A use whose write failed, kept until one is written: the sweep reads it beside the record's,
  // so a client returned to a request is not deleted under it by a stale stamp on disk
  // (test/unit/oauth/clients-sweep.test.ts "a client whose use could not be written"). Only
  // clients used since boot whose write failed are here; a written use or a deletion drops
  // one, and a graceful stop writes what is left (`writeRememberedUses`).
  private readonly unwrittenUses = new Map<string, number>();
  // An unreadable record is reported once per process, not at every sweep or lookup of it.
  private readonly reportedUnreadable = new Set<string>();
  // The hash travels beside the client object, never in it, so no page or log that shows a
  // client can show its secret's hash either.
  private readonly secretHashes = new WeakMap<OAuthClientInformationFull, string>();
  private capFullReportedAt = Number.NEGATIVE_INFINITY;

  constructor(
    layout: StorageLayout,
    private readonly documents: Pick<ClientMetadataDocuments, "resolve" | "cachedName">,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly cap: UnusedClientCap,
  ) {
    this.records = new JsonRecords(layout, "oauth/clients");
  }

  /** Counts the stored clients toward the cap on unused ones: call once at boot, before registration. */
  async load(): Promise<void> {
    this.cap.load((await this.records.ids()).filter((id) => CLIENT_ID.test(id)));
  }

  /**
   * Registers a client, or throws an invalid_client_metadata or invalid_redirect_uri OAuthError,
   * or temporarily_unavailable while the instance holds as many clients without a live grant as
   * it keeps (ADR 0156; nothing is written or deleted then).
   */
  async register(metadata: unknown): Promise<OAuthClientInformationFull> {
    const checked = checkClientMetadata(metadata);
    const client: OAuthClientInformationFull = {
      ...checked,
      client_id: `atc_${randomBytes(16).toString("hex")}`,
      client_id_issued_at: Math.floor(this.clock() / 1000),
    };
    if (!this.cap.reserve(client.client_id)) throw this.capFull();
    try {
      return await this.store(client);
    } catch (error) {
      this.cap.forget(client.client_id);
      throw error;
    }
  }

  private async store(client: OAuthClientInformationFull): Promise<OAuthClientInformationFull> {
    const lastUsedAt = this.clock();
    if (client.token_endpoint_auth_method === "none") {
      await this.records.put(client.client_id, { client, lastUsedAt });
      return client;
    }
    const secret = randomSecret(32);
    // RFC 7591 §3.2.1: 0 says the secret does not expire.
    const confidential = { ...client, client_secret_expires_at: 0 };
    await this.records.put(client.client_id, {
      client: confidential,
      clientSecretHash: hashSecret(secret),
      lastUsedAt,
    });
    return { ...confidential, client_secret: secret };
  }

  /**
   * The refusal while the cap is full, logged at most hourly so a flood does not fill the log
   * instead; a report the clock reads before (stepped back since) is no reason to stay silent
   * (ADR 0168).
   */
  private capFull(): OAuthError {
    const now = this.clock();
    if (!isWithin(now, this.capFullReportedAt, CAP_FULL_REPORTED_EVERY_MS)) {
      this.capFullReportedAt = now;
      this.log.warn(
        { maxUnusedClients: this.cap.max },
        "oauth client registration is refused: the instance holds oauth.maxUnusedClients registered clients without a live grant; the hourly housekeeping deletes those unused for 30 days (raise the setting if this is not a flood)",
      );
    }
    return new OAuthError(
      "temporarily_unavailable",
      `This instance holds as many registered clients without a grant as it keeps (${this.cap.max}); try again later, reuse the client you registered, or name the client by its client ID metadata document URL.`,
    );
  }

  /**
   * A registered client, or the client a metadata document URL describes, or `undefined`
   * for an id that is neither. A document that cannot be used throws an invalid_client OAuthError
   * with the reason, for the person or client to read. `caller` (a signed-in person's key at
   * authorization, else the connecting address) is charged for a document that has to be fetched.
   * Finding a client is not a use of it: anyone can name any id, signed out and without its
   * secret, and a lookup that kept a client from the sweep let a stranger keep a flood's clients,
   * and the cap on them (ADR 0156), for ever (`recordUse` is the use). A record that is not JSON
   * or not a client is unreadable: `undefined`, and left for an operator.
   */
  async find(clientId: string, caller: string): Promise<OAuthClientInformationFull | undefined> {
    if (CLIENT_ID.test(clientId)) {
      const stored = await this.read(clientId);
      if (!stored) return undefined;
      const client = { ...stored.client };
      if (stored.clientSecretHash) this.secretHashes.set(client, stored.clientSecretHash);
      return client;
    }
    if (isClientMetadataUrl(clientId)) return this.documents.resolve(clientId, caller);
    return undefined;
  }

  /**
   * A client's name from what this instance holds, never fetched: a registered client's record,
   * or a metadata document still cached. For a grant stored before grants kept their client's
   * name; a listing that fetched made one request of a person's up to 100 outbound fetches,
   * charged to nobody (adr/0127).
   */
  async storedName(clientId: string): Promise<string | undefined> {
    if (CLIENT_ID.test(clientId)) {
      const stored = await this.records.get(clientId).catch(() => undefined);
      return isStoredClient(stored) ? stored.client.client_name : undefined;
    }
    return isClientMetadataUrl(clientId) ? this.documents.cachedName(clientId) : undefined;
  }

  /**
   * Whether the presented credentials prove the request comes from `client` (as `find`
   * returned it): the method it registered, and for a confidential client its secret. A
   * public client that sends a secret anyway is refused rather than half-trusted.
   */
  authenticate(client: OAuthClientInformationFull, presented: PresentedClientAuth): boolean {
    const registered = client.token_endpoint_auth_method ?? "none";
    if (presented.method !== registered) return false;
    if (registered === "none") return presented.secret === undefined;
    const hash = this.secretHashes.get(client);
    if (hash === undefined || presented.secret === undefined) return false;
    return equalSecrets(hashSecret(presented.secret), hash);
  }

  /**
   * Deletes every registered client last used UNUSED_CLIENT_KEPT_MS ago or longer for which
   * `hasLiveGrant` is false, and returns their ids; from then on its id is unknown
   * (`invalid_client`). Each is judged on its record read again under its key: a use
   * (`recordUse`) that came first has been recorded, and one that comes after finds no client. Metadata
   * document clients are not stored, so never swept. One client that cannot be judged (its
   * write or delete fails) is logged and judged again next time; the rest are still judged.
   */
  async sweep(hasLiveGrant: (clientId: string) => boolean): Promise<string[]> {
    const swept: string[] = [];
    for (const id of await this.records.ids()) {
      if (!CLIENT_ID.test(id)) continue;
      try {
        if (await this.locks.run(id, () => this.sweepOne(id, hasLiveGrant))) swept.push(id);
      } catch (error) {
        // A full disk or a file it may not touch is this client's problem, not every later one's
        // (test/unit/oauth/clients-sweep.test.ts "one client that cannot be written").
        this.log.warn(
          { clientId: id, err: error },
          "a registered oauth client could not be swept; the others were, and it is judged again at the next housekeeping",
        );
      }
    }
    return swept;
  }

  /**
   * Writes each use kept only in memory because its write failed (`unwrittenUses`), for a
   * graceful stop: memory does not outlive the process, and the next one would judge a client
   * used only then by the older stamp on disk, and could sweep it as unused. Best effort, once:
   * a use that cannot be written now either is logged and goes with the process. A use already
   * on disk as late, or a client deleted since, needs no write. None starts once `signal` is
   * aborted (the stop lets the root go then, and a next process may own it), nor once
   * `stillOurs` (the root's lock, asked before each write) says another process holds the root:
   * a stop the heartbeat began after a takeover comes here too.
   */
  async writeRememberedUses(signal: AbortSignal, stillOurs: () => Promise<boolean>): Promise<void> {
    for (const id of [...this.unwrittenUses.keys()]) {
      if (signal.aborted) return;
      try {
        await this.locks.run(id, async () => {
          const usedAt = this.unwrittenUses.get(id);
          if (usedAt === undefined) return;
          const stored = await this.read(id);
          // Aborted during the read or the wait for the key: the root may be another process's.
          if (signal.aborted || !(await stillOurs())) return;
          const written = stored && lastUseOf(stored);
          if (stored && (written === undefined || written < usedAt)) {
            await this.records.put(id, { ...stored, lastUsedAt: usedAt });
          }
          this.unwrittenUses.delete(id);
        });
      } catch (error) {
        this.log.warn(
          { clientId: id, err: error },
          "a registered oauth client's last use, kept in memory since its write failed, could not be written at the stop either: the next process judges it by the older use on disk",
        );
      }
    }
  }

  /** Whether the client may use refresh tokens: it registered the grant, or named no grants at all. */
  allowsRefresh(client: OAuthClientInformationFull): boolean {
    return client.grant_types === undefined || client.grant_types.includes("refresh_token");
  }

  /** Whether `id` was deleted: run under its key. */
  private async sweepOne(id: string, hasLiveGrant: (clientId: string) => boolean): Promise<boolean> {
    // Unreadable is left for an operator, as find leaves it.
    const stored = this.readable(id, await this.records.get(id).catch(() => null));
    if (stored === undefined) return false;
    const now = this.clock();
    const lastUsedAt = latest(lastUseOf(stored), this.unwrittenUses.get(id));
    if (lastUsedAt === undefined) {
      await this.records.put(id, { ...stored, lastUsedAt: now });
      return false;
    }
    if (now - lastUsedAt < UNUSED_CLIENT_KEPT_MS || hasLiveGrant(id)) return false;
    await this.records.delete(id);
    this.unwrittenUses.delete(id);
    this.cap.forget(id);
    return true;
  }

  /**
   * Records a use of `clientId` that proved something, and says whether the client is still
   * known: a consent its person gave (before its code is issued, so the exchange minutes later
   * finds it), or a refresh token it redeemed at the token endpoint (its secret checked, if it
   * has one). Only such a use starts a
   * registered client's 30 days again; a client nobody consented to is swept 30 days after it
   * registered, however often it is named (ADR 0156's amendment). `false` when a registered
   * client is no longer stored (the sweep came first): its consent must issue no code. A client
   * named by a metadata document URL is not stored: nothing to record, `true`.
   *
   * Written at most daily, best effort, as `use` says.
   */
  async recordUse(clientId: string): Promise<boolean> {
    if (!CLIENT_ID.test(clientId)) return isClientMetadataUrl(clientId);
    return (await this.use(clientId)) !== undefined;
  }

  /**
   * A registered client's record, with this moment written as its last use when the one stored
   * is a day old or missing. Read without the client's key first: a client used within the day
   * is 29 days from any sweep and needs no write, so a busy client's refreshes never queue behind
   * one another, a sweep or the daily write (test/unit/oauth/clients-sweep.test.ts "a use of a
   * client used today"). Only a stale use takes the key and judges the record read again there.
   */
  private async use(clientId: string): Promise<StoredClient | undefined> {
    const seen = await this.read(clientId);
    if (seen === undefined || this.usedToday(seen)) return seen;
    return this.locks.run(clientId, async () => {
      const stored = await this.read(clientId);
      if (stored === undefined || this.usedToday(stored)) return stored;
      const now = this.clock();
      try {
        await this.records.put(clientId, { ...stored, lastUsedAt: now });
        this.unwrittenUses.delete(clientId);
      } catch (error) {
        // Best effort: the request goes on with its client, and the next use tries again. The
        // use is kept in memory for the sweep, so one left unwritten never deletes a client in use.
        this.unwrittenUses.set(clientId, now);
        this.log.warn(
          { clientId, err: error },
          "a registered oauth client's last use could not be recorded; its next use tries again",
        );
      }
      return stored;
    });
  }

  /** The record under `clientId` as `readable` judges it; a file that is not JSON is unreadable too. */
  private async read(clientId: string): Promise<StoredClient | undefined> {
    const value = await this.records.get(clientId).catch((error: unknown) => {
      if (error instanceof CorruptJson) return null;
      throw error;
    });
    return this.readable(clientId, value);
  }

  /**
   * Whether the use stored is recent enough to need no write. One the clock reads before (stepped
   * back since) is not: this use is written, so the 30 days run from a time the clock has seen
   * rather than waiting for it to catch up (ADR 0168). The sweep's own comparison is left by hand
   * on purpose: there, a use ahead of now keeps the client.
   */
  private usedToday(stored: StoredClient): boolean {
    const lastUsedAt = lastUseOf(stored);
    return lastUsedAt !== undefined && isWithin(this.clock(), lastUsedAt, CLIENT_USE_RECORDED_EVERY_MS);
  }

  /**
   * `value` as a client record, or `undefined` for none. One that is not an object holding its
   * client (`null`, a number, an array, or a file that did not read as JSON) is unreadable: it
   * is never read as a client, swept or overwritten, and is reported once, without its contents.
   */
  private readable(clientId: string, value: unknown): StoredClient | undefined {
    if (value === undefined || isStoredClient(value)) return value;
    if (!this.reportedUnreadable.has(clientId)) {
      this.reportedUnreadable.add(clientId);
      this.log.warn(
        { clientId },
        "a registered oauth client's record is unreadable; it is left as it is and its client_id answers as unknown: restore it from a backup or remove it",
      );
    }
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStoredClient(value: unknown): value is StoredClient {
  return isObject(value) && isObject(value.client);
}

/** The later of two uses, either of which may be unknown. */
function latest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? (a ?? b) : Math.max(a, b);
}

/** The recorded last use, or `undefined` when none is: absent, or not a finite number (it never was a time). */
function lastUseOf(stored: StoredClient): number | undefined {
  const { lastUsedAt } = stored;
  return typeof lastUsedAt === "number" && Number.isFinite(lastUsedAt) ? lastUsedAt : undefined;
}
