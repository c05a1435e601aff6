import { type CredentialRef, readCredential } from "../../instance/credentials.ts";
import type { ConfigSection } from "../../instance/schema.ts";
import { type CatalogSettings, catalogConfigProperties, resolveCatalogSettings } from "./catalog-config.ts";
import type { ConfiguredClient } from "./oauth/client-identity.ts";
import { DEFAULT_MAX_SNAPSHOT_BYTES } from "./snapshot.ts";

export interface ConnectionSettings extends CatalogSettings {
  /** Lets a server live at a loopback, private or link-local address, over http: local development only. */
  allowPrivateAddresses: boolean;
  /** How often the HealthMonitor probes each running connection's transport. */
  healthIntervalMs: number;
  /** How often the ConnectionRevalidator checks each connection's credential (and on any 401). */
  credentialCheckIntervalMs: number;
  /** The longest a server's live tool listing is trusted for the drift check (ADR 0039). */
  toolListMaxAgeMs: number;
  /** How long a request to a server may take to answer in full (an MCP event stream: to begin). */
  requestTimeoutMs: number;
  /** The most bytes one answer of a server may carry. */
  maxResponseBytes: number;
  /** The most bytes a whole snapshot of a server's tools may take as stored (adr/0091, amended). */
  maxSnapshotBytes: number;
  /** OAuth clients an operator registered by hand, per authorization server (the last resort). */
  oauthClients: ConfiguredClient[];
}

interface ConnectionsFile {
  allowPrivateAddresses?: boolean;
  healthIntervalSeconds?: number;
  credentialCheckIntervalSeconds?: number;
  toolListMaxAgeSeconds?: number;
  requestTimeoutSeconds?: number;
  maxResponseBytes?: number;
  maxSnapshotBytes?: number;
  oauth?: { clients?: { issuer: string; clientId: string; clientSecret?: CredentialRef }[] };
}

/** instance.json's `connections` section. */
export const connectionsConfig: ConfigSection<ConnectionSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      allowPrivateAddresses: { type: "boolean" },
      healthIntervalSeconds: { type: "integer", minimum: 1, maximum: 3600 },
      credentialCheckIntervalSeconds: { type: "integer", minimum: 1, maximum: 86_400 },
      toolListMaxAgeSeconds: { type: "integer", minimum: 1, maximum: 3600 },
      requestTimeoutSeconds: { type: "integer", minimum: 1, maximum: 300 },
      maxResponseBytes: { type: "integer", minimum: 1024, maximum: 1024 * 1024 * 1024 },
      // At least 1 MiB: a snapshot of one tool at its own bound (64 KiB) with room to spare.
      maxSnapshotBytes: { type: "integer", minimum: 1024 * 1024, maximum: 1024 * 1024 * 1024 },
      oauth: {
        type: "object",
        additionalProperties: false,
        properties: {
          clients: {
            type: "array",
            maxItems: 100,
            items: {
              type: "object",
              additionalProperties: false,
              required: ["issuer", "clientId"],
              properties: {
                issuer: { type: "string", format: "uri", pattern: "^https?://" },
                clientId: { type: "string", minLength: 1, maxLength: 2048 },
                // A section is validated within the whole file, so the file's own definition applies.
                clientSecret: { $ref: "#/$defs/credentialRef" },
              },
            },
          },
        },
      },
      ...catalogConfigProperties,
    },
  },
  resolve(section, where) {
    const file = (section ?? {}) as ConnectionsFile;
    return {
      ...resolveCatalogSettings(section, where),
      allowPrivateAddresses: file.allowPrivateAddresses ?? false,
      healthIntervalMs: (file.healthIntervalSeconds ?? 30) * 1000,
      credentialCheckIntervalMs: (file.credentialCheckIntervalSeconds ?? 300) * 1000,
      toolListMaxAgeMs: (file.toolListMaxAgeSeconds ?? 60) * 1000,
      requestTimeoutMs: (file.requestTimeoutSeconds ?? 30) * 1000,
      maxResponseBytes: file.maxResponseBytes ?? 16 * 1024 * 1024,
      maxSnapshotBytes: file.maxSnapshotBytes ?? DEFAULT_MAX_SNAPSHOT_BYTES,
      oauthClients: (file.oauth?.clients ?? []).map((client, index) => ({
        issuer: client.issuer,
        clientId: client.clientId,
        ...(client.clientSecret
          ? {
              clientSecret: readCredential(
                client.clientSecret,
                `connections.oauth.clients[${index}].clientSecret`,
                where.baseDir,
              ),
            }
          : {}),
      })),
    };
  },
};
