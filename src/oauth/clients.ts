import { randomBytes } from "node:crypto";
import { equalSecrets, hashSecret, randomSecret } from "../crypto/secrets.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { JsonRecords } from "../storage/records.ts";
import type { ClientMetadataDocuments } from "./client-metadata.ts";
import { isClientMetadataUrl } from "./client-metadata.ts";
import { type ClientAuthMethod, checkClientMetadata } from "./client-rules.ts";
import type { OAuthClientInformationFull } from "./oauth-types.ts";

const CLIENT_ID = /^atc_[0-9a-f]{32}$/;

/** A registered client on disk: what it registered, and its secret only as a hash. */
interface StoredClient {
  client: OAuthClientInformationFull;
  clientSecretHash?: string;
}

/** What a request presented at the token or revocation endpoint to prove it is the client. */
export interface PresentedClientAuth {
  method: ClientAuthMethod;
  secret?: string;
}

/**
 * Clients: those that registered here (RFC 7591), stored in `oauth/clients`, and those
 * named by a client metadata document URL, fetched on demand. A confidential client's
 * secret is returned once, at registration, and stored only as its SHA-256.
 */
export class ClientRegistry {
  private readonly records: JsonRecords<StoredClient>;
  // The hash travels beside the client object, never in it, so no page or log that shows a
  // client can show its secret's hash either.
  private readonly secretHashes = new WeakMap<OAuthClientInformationFull, string>();

  constructor(
    layout: StorageLayout,
    private readonly documents: Pick<ClientMetadataDocuments, "resolve" | "cachedName">,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new JsonRecords(layout, "oauth/clients");
  }

  /** Registers a client, or throws an invalid_client_metadata or invalid_redirect_uri OAuthError. */
  async register(metadata: unknown): Promise<OAuthClientInformationFull> {
    const checked = checkClientMetadata(metadata);
    const client: OAuthClientInformationFull = {
      ...checked,
      client_id: `atc_${randomBytes(16).toString("hex")}`,
      client_id_issued_at: Math.floor(this.clock() / 1000),
    };
    if (checked.token_endpoint_auth_method === "none") {
      await this.records.put(client.client_id, { client });
      return client;
    }
    const secret = randomSecret(32);
    // RFC 7591 §3.2.1: 0 says the secret does not expire.
    const confidential = { ...client, client_secret_expires_at: 0 };
    await this.records.put(client.client_id, { client: confidential, clientSecretHash: hashSecret(secret) });
    return { ...confidential, client_secret: secret };
  }

  /**
   * A registered client, or the client a metadata document URL describes, or `undefined`
   * for an id that is neither. A document that cannot be used throws an invalid_client OAuthError
   * with the reason, for the person or client to read. `caller`, the connecting address a
   * request came from, is charged for a document that has to be fetched.
   */
  async find(clientId: string, caller: string): Promise<OAuthClientInformationFull | undefined> {
    if (CLIENT_ID.test(clientId)) {
      const stored = await this.records.get(clientId);
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
    if (CLIENT_ID.test(clientId))
      return (await this.records.get(clientId).catch(() => undefined))?.client.client_name;
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

  /** Whether the client may use refresh tokens: it registered the grant, or named no grants at all. */
  allowsRefresh(client: OAuthClientInformationFull): boolean {
    return client.grant_types === undefined || client.grant_types.includes("refresh_token");
  }
}
