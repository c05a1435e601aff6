import { createHash } from "node:crypto";
import type { OAuthClientInformationMixed } from "@modelcontextprotocol/client";
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
 * A secret is sealed in the credential store, bound to the registration's record id.
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
    return {
      client_id: stored.clientId,
      ...(stored.secret ? { client_secret: await this.vault.open(stored.secret, id, SECRET_FIELD) } : {}),
    };
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
      const secret = info.client_secret
        ? await this.vault.put(id, SECRET_FIELD, info.client_secret)
        : undefined;
      await this.records.put(id, {
        issuer,
        redirectUri,
        clientId: info.client_id,
        ...(secret ? { secret } : {}),
        registeredAt: new Date(this.now()).toISOString(),
      });
      return {
        client_id: info.client_id,
        ...(info.client_secret ? { client_secret: info.client_secret } : {}),
      };
    });
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
