import {
  type FetchLike,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  registerClient,
} from "@modelcontextprotocol/client";
import { isLoopbackHost } from "../../../instance/load.ts";
import type { AuthorizationTarget } from "./discovery.ts";
import { AuthorizationRefused } from "./discovery.ts";
import { promisesIss } from "./tokens.ts";

/** A client an operator registered at an authorization server by hand (instance.json). */
export interface ConfiguredClient {
  issuer: string;
  clientId: string;
  /** Read once at boot from its credential reference; never logged or answered. */
  clientSecret?: string;
}

/** How Atrium is known to one authorization server. */
export interface OAuthClient {
  info: OAuthClientInformationMixed;
  how: "metadata_document" | "registered" | "configured";
}

/** Who a token set was issued to: enough to find that client again (clientIssuedTo). */
export interface IssuedTo {
  clientId: string;
  how: OAuthClient["how"];
  /** The flow's redirect URI: with the issuer, what names a dynamic registration. */
  redirectUri: string;
}

/** Where a dynamic registration is kept, one per (issuer, redirect URI), its secret sealed. */
export interface ClientRegistrations {
  get(issuer: string, redirectUri: string): Promise<OAuthClientInformationMixed | undefined>;
  /** Runs `register` only when nothing is stored yet, one at a time per key, and keeps its answer. */
  getOrRegister(
    issuer: string,
    redirectUri: string,
    register: () => Promise<OAuthClientInformationMixed>,
  ): Promise<OAuthClientInformationMixed>;
}

export interface ClientIdentityOptions {
  /** The redirect URI of flows at this target (paths.ts redirectUriFor): what a registration names. */
  redirectUri: string;
  /**
   * The URL of the client ID metadata document Atrium serves, set only when the public URL is
   * https and not loopback (an authorization server must be able to fetch it). Its one redirect
   * URI is the shared callback, so it is used only where the server promises `iss` (ADR 0077).
   */
  metadataDocumentUrl?: string;
  configured: readonly ConfiguredClient[];
  registrations: ClientRegistrations;
  fetch: FetchLike;
}

/** What Atrium says about itself as an OAuth client: its metadata document, and its registrations. */
export function clientMetadata(
  redirectUri: string,
  options: { clientId?: string; authMethod?: string } = {},
): OAuthClientMetadata {
  return {
    ...(options.clientId ? { client_id: options.clientId } : {}),
    client_name: "Atrium",
    redirect_uris: [redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: options.authMethod ?? "none",
    application_type: applicationType(redirectUri),
  } as OAuthClientMetadata;
}

/**
 * Atrium's client identity at the target's authorization server, in the order the issue sets:
 * its client ID metadata document when the server accepts one, promises RFC 9207 `iss`, and
 * Atrium has a public https URL, else a dynamic registration (made once per authorization server
 * and redirect URI, and reused), else a client configured for that issuer. None of them: refused,
 * saying what the operator can do.
 *
 * The document is one client_id at every server, listing only the shared callback: any server
 * that accepts documents accepts that redirect URI for it, so the callback cannot tell servers
 * apart and only `iss` can (ADR 0077). A server that accepts documents but does not promise `iss`
 * gets a registration, or a configured client, at its own callback instead.
 */
export async function clientFor(
  target: AuthorizationTarget,
  options: ClientIdentityOptions,
): Promise<OAuthClient> {
  const { metadata } = target;
  const acceptsDocument =
    (metadata as { client_id_metadata_document_supported?: unknown })
      .client_id_metadata_document_supported === true;
  if (options.metadataDocumentUrl && acceptsDocument && promisesIss(target)) {
    return { info: { client_id: options.metadataDocumentUrl }, how: "metadata_document" };
  }
  if (metadata.registration_endpoint) {
    const info = await options.registrations.getOrRegister(target.issuer, options.redirectUri, async () => {
      try {
        return await registerClient(target.issuer, {
          metadata,
          clientMetadata: clientMetadata(options.redirectUri, { authMethod: registrationAuthMethod(target) }),
          fetchFn: options.fetch,
        });
      } catch (error) {
        throw new AuthorizationRefused(
          `The authorization server ${target.issuer} refused to register Atrium as a client: ${(error as Error).message.slice(0, 200)}`,
        );
      }
    });
    return { info, how: "registered" };
  }
  const configured = options.configured.find((client) => client.issuer === target.issuer);
  if (configured) return configuredClient(configured);
  throw new AuthorizationRefused(
    `Atrium has no client at ${target.issuer}: it accepts no client ID metadata document from this instance (or does not promise RFC 9207 "iss"), offers no dynamic registration, ` +
      `and instance.json configures no client for it (connections.oauth.clients: [{"issuer", "clientId", "clientSecret"?}], registered there with the redirect URI ${options.redirectUri}).`,
  );
}

/**
 * The client a token set was issued to, at `target`, when Atrium still knows it: the dynamic
 * registration kept for its redirect URI, the configured client of that id, or the metadata
 * document's URL (a public client: its id is all a refresh sends). `undefined` when that client
 * is gone (a registration removed, a configured client taken out of instance.json).
 */
export async function clientIssuedTo(
  target: AuthorizationTarget,
  issuedTo: IssuedTo,
  options: Pick<ClientIdentityOptions, "configured" | "registrations">,
): Promise<OAuthClient | undefined> {
  if (issuedTo.how === "metadata_document")
    return { info: { client_id: issuedTo.clientId }, how: issuedTo.how };
  if (issuedTo.how === "registered") {
    const info = await options.registrations.get(target.issuer, issuedTo.redirectUri);
    return info?.client_id === issuedTo.clientId ? { info, how: issuedTo.how } : undefined;
  }
  const configured = options.configured.find(
    (client) => client.issuer === target.issuer && client.clientId === issuedTo.clientId,
  );
  return configured && configuredClient(configured);
}

/**
 * SEP-837 / OpenID registration: a "web" client redirects to an https address that is not
 * loopback; Atrium on a loopback URL (local use) is a "native" one (RFC 8252).
 */
function applicationType(redirectUri: string): "web" | "native" {
  const url = new URL(redirectUri);
  return url.protocol === "https:" && !isLoopbackHost(url.hostname) ? "web" : "native";
}

/** A public client ("none") where the server allows one; else the secret it will issue, sent by Basic. */
function registrationAuthMethod(target: AuthorizationTarget): string {
  const supported = target.metadata.token_endpoint_auth_methods_supported;
  return !supported || supported.includes("none") ? "none" : "client_secret_basic";
}

function configuredClient(configured: ConfiguredClient): OAuthClient {
  return {
    info: {
      client_id: configured.clientId,
      ...(configured.clientSecret ? { client_secret: configured.clientSecret } : {}),
    },
    how: "configured",
  };
}
