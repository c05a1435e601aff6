import { createHash } from "node:crypto";
import type { OAuthClientInformationMixed } from "@modelcontextprotocol/client";
import { CredentialNotFound, newCredentialId } from "../../../storage/credential-store.ts";
import { KeyedLock } from "../../../storage/keyed-lock.ts";
import type { StorageLayout } from "../../../storage/paths.ts";
import { JsonRecords } from "../../../storage/records.ts";
import type { CredentialVault } from "../remote.ts";
import type { ClientRegistrations } from "./client-identity.ts";

/** `_instance/connections/registrations/<digest>.json`: a registration without its secret's value. */
interface StoredRegistration {
  issuer: string;
  redirectUri: string;
  clientId: string;
  /** The sealed client secret's credential id, when the server issued one. */
  secret?: string;
  registeredAt: string;
}

const SECRET_FIELD = "client_secret";

/**
 * Dynamic registrations, one per (authorization server, redirect URI), reused by every connection
 * to that server: registering once per connection would leave a trail of clients at the server.
 * A secret is sealed in the credential store, bound to the registration's record id, and only
 * after the record naming it is stored: sealed first, a record write that failed (or a crash
 * between the two) left a sealed secret nothing named, and each retry registered again and left
 * another (client-identity.test.ts "a registration whose record"). A record whose secret is not
 * there (its seal failed) is no registration: it is registered again over it.
 */
export class StoredRegistrations implements ClientRegistrations {
  private readonly records: JsonRecords<StoredRegistration>;
  private readonly lock = new KeyedLock();

  constructor(
    layout: StorageLayout,
    private readonly vault: CredentialVault,
    private readonly now: () => number,
  ) {
    this.records = new JsonRecords(layout, "connections/registrations");
  }

  async get(issuer: string, redirectUri: string): Promise<OAuthClientInformationMixed | undefined> {
    const id = registrationId(issuer, redirectUri);
    const stored = await this.records.get(id);
    if (!stored) return undefined;
    if (!stored.secret) return { client_id: stored.clientId };
    try {
      return {
        client_id: stored.clientId,
        client_secret: await this.vault.open(stored.secret, id, SECRET_FIELD),
      };
    } catch (error) {
      if (error instanceof CredentialNotFound) return undefined;
      throw error;
    }
  }

  getOrRegister(
    issuer: string,
    redirectUri: string,
    register: () => Promise<OAuthClientInformationMixed>,
  ): Promise<OAuthClientInformationMixed> {
    const id = registrationId(issuer, redirectUri);
    return this.lock.run(id, async () => {
      const known = await this.get(issuer, redirectUri);
      if (known) return known;
      const info = await register();
      const secret = info.client_secret ? { id: newCredentialId(), value: info.client_secret } : undefined;
      await this.records.put(id, {
        issuer,
        redirectUri,
        clientId: info.client_id,
        ...(secret ? { secret: secret.id } : {}),
        registeredAt: new Date(this.now()).toISOString(),
      });
      if (secret) await this.sealSecret(id, secret);
      return {
        client_id: info.client_id,
        ...(info.client_secret ? { client_secret: info.client_secret } : {}),
      };
    });
  }

  /** Seals the secret the record already names; failed, the record goes too, so nothing names a missing secret. */
  private async sealSecret(id: string, secret: { id: string; value: string }): Promise<void> {
    try {
      await this.vault.put(id, SECRET_FIELD, secret.value, secret.id);
    } catch (error) {
      // A removal that fails too leaves a record whose secret is not there, which `get` answers
      // as no registration: the seal's error is the one to tell.
      await this.records.delete(id).catch(() => undefined);
      throw error;
    }
  }
}

/** Registrations kept in memory: a one-shot client (the conformance client script) that stores nothing. */
export function memoryRegistrations(): ClientRegistrations {
  const known = new Map<string, Promise<OAuthClientInformationMixed>>();
  return {
    get: async (issuer, redirectUri) => known.get(registrationId(issuer, redirectUri)),
    getOrRegister(issuer, redirectUri, register) {
      const id = registrationId(issuer, redirectUri);
      let info = known.get(id);
      if (!info) {
        info = register();
        known.set(id, info);
        info.catch(() => known.delete(id));
      }
      return info;
    },
  };
}

function registrationId(issuer: string, redirectUri: string): string {
  return createHash("sha256").update(`${issuer}\n${redirectUri}`).digest("hex");
}
