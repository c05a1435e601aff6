import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ClientIdentityOptions,
  clientFor,
  clientIssuedTo,
} from "../../../../../src/platform/connections/oauth/client-identity.ts";
import type { AuthorizationTarget } from "../../../../../src/platform/connections/oauth/discovery.ts";
import {
  bindingCookieName,
  issuerKey,
  oauthPaths,
  redirectUriFor,
} from "../../../../../src/platform/connections/oauth/paths.ts";
import { StoredRegistrations } from "../../../../../src/platform/connections/oauth/registrations.ts";
import { CredentialStore } from "../../../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../../../src/storage/paths.ts";
import { localTarget, serveLocally } from "../../../../helpers/local-http.ts";

const CLIENT_SECRET = `dcr-secret-${randomBytes(8).toString("hex")}`;
const REDIRECT = "https://atrium.example/v1/connections/oauth/callback";
const DOCUMENT = "https://atrium.example/connections/oauth/client-metadata.json";

let root: string;
let vault: CredentialStore;
let layout: StorageLayout;
let server: { base: string; close(): Promise<void> };
let base: string;
let registrationBodies: Record<string, unknown>[];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-oauth-clients-"));
  layout = new StorageLayout(root);
  vault = await CredentialStore.open(layout, { keys: new Map([[1, randomBytes(32)]]), newest: 1 });
  registrationBodies = [];
  server = await serveLocally((_request, body) => {
    registrationBodies.push(JSON.parse(body) as Record<string, unknown>);
    return {
      status: 201,
      json: {
        client_id: `atc_${registrationBodies.length}`,
        client_secret: CLIENT_SECRET,
        redirect_uris: [REDIRECT],
      },
    };
  });
  base = server.base;
});

afterEach(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

function target(extra: Record<string, unknown> = {}): AuthorizationTarget {
  return localTarget(base, extra) as AuthorizationTarget;
}

function options(extra: Partial<ClientIdentityOptions> = {}): ClientIdentityOptions {
  return {
    redirectUri: REDIRECT,
    configured: [],
    registrations: new StoredRegistrations(layout, vault, () => 0),
    fetch,
    ...extra,
  };
}

describe("clientFor", () => {
  it("uses the client ID metadata document when the server accepts one, promises iss, and Atrium has a public https URL", async () => {
    const client = await clientFor(
      target({
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        registration_endpoint: `${base}/register`,
      }),
      options({ metadataDocumentUrl: DOCUMENT }),
    );
    expect(client).toEqual({ info: { client_id: DOCUMENT }, how: "metadata_document" });
    expect(registrationBodies).toHaveLength(0);
  });

  it("registers instead, at the issuer's own callback, where the server accepts the document but does not promise iss", async () => {
    // The document's one redirect URI is the shared callback, which any server accepting documents
    // would send its answer to: without iss, the answer could not be told from another server's.
    const accepting = target({
      client_id_metadata_document_supported: true,
      registration_endpoint: `${base}/register`,
    });
    const redirectUri = redirectUriFor(oauthPaths("https://atrium.example"), accepting.issuer, false);
    const client = await clientFor(accepting, options({ metadataDocumentUrl: DOCUMENT, redirectUri }));
    expect(client.how).toBe("registered");
    expect(registrationBodies[0]).toMatchObject({ redirect_uris: [redirectUri] });
  });

  it("registers once per authorization server, keeps the secret sealed, and reuses the registration", async () => {
    const registering = target({ registration_endpoint: `${base}/register` });
    // No document URL (a loopback or http public URL): registration, even if documents are accepted.
    const first = await clientFor(
      target({ registration_endpoint: `${base}/register`, client_id_metadata_document_supported: true }),
      options(),
    );
    const again = await Promise.all([clientFor(registering, options()), clientFor(registering, options())]);
    expect(first).toEqual({ info: { client_id: "atc_1", client_secret: CLIENT_SECRET }, how: "registered" });
    expect(again.map((c) => c.info.client_id)).toEqual(["atc_1", "atc_1"]);
    expect(registrationBodies).toHaveLength(1);
    expect(registrationBodies[0]).toMatchObject({
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: "none",
      application_type: "web",
    });
    const stored = join(root, "_instance", "connections", "registrations");
    const [file] = await readdir(stored);
    expect(await readFile(join(stored, file as string), "utf8")).not.toContain(CLIENT_SECRET);
  });

  it("falls back to a configured client for the issuer, and refuses when there is none", async () => {
    const configured = [{ issuer: base, clientId: "by-hand", clientSecret: "configured-secret" }];
    expect(await clientFor(target(), options({ configured }))).toEqual({
      info: { client_id: "by-hand", client_secret: "configured-secret" },
      how: "configured",
    });
    await expect(
      clientFor(target(), options({ configured: [{ issuer: "https://other.example", clientId: "x" }] })),
    ).rejects.toThrow(/connections\.oauth\.clients/);
  });
});

describe("clientIssuedTo", () => {
  it("finds the registration, configured client or document a token set was issued to, and nothing once it is gone", async () => {
    const registering = target({ registration_endpoint: `${base}/register` });
    const registered = await clientFor(registering, options());
    const configured = [{ issuer: base, clientId: "by-hand", clientSecret: "configured-secret" }];
    // Atrium's redirect URI changed since (a new public URL): a new registration is made for it.
    const moved = await clientFor(registering, options({ redirectUri: "https://new.example/cb" }));
    expect(moved.info.client_id).toBe("atc_2");
    const find = (to: Parameters<typeof clientIssuedTo>[1]) =>
      clientIssuedTo(registering, to, options({ configured }));
    expect(await find({ clientId: "atc_1", how: "registered", redirectUri: REDIRECT })).toEqual(registered);
    expect(await find({ clientId: "by-hand", how: "configured", redirectUri: REDIRECT })).toEqual({
      info: { client_id: "by-hand", client_secret: "configured-secret" },
      how: "configured",
    });
    expect(await find({ clientId: DOCUMENT, how: "metadata_document", redirectUri: REDIRECT })).toEqual({
      info: { client_id: DOCUMENT },
      how: "metadata_document",
    });
    expect(await find({ clientId: "atc_9", how: "registered", redirectUri: REDIRECT })).toBeUndefined();
    expect(
      await find({ clientId: "atc_1", how: "registered", redirectUri: "https://gone.example/cb" }),
    ).toBeUndefined();
    expect(await find({ clientId: "removed", how: "configured", redirectUri: REDIRECT })).toBeUndefined();
  });
});

describe("oauthPaths", () => {
  it("serves the metadata document only at a public https URL that is not loopback", () => {
    expect(oauthPaths("https://atrium.example").metadataDocument).toBe(DOCUMENT);
    expect(oauthPaths("https://127.0.0.1:8443").metadataDocument).toBeUndefined();
    expect(oauthPaths("http://atrium.example").metadataDocument).toBeUndefined();
    expect(oauthPaths("https://atrium.example").callback).toBe(REDIRECT);
  });

  it("gives each issuer that does not promise iss its own callback, and the shared one to those that do", () => {
    const paths = oauthPaths("https://atrium.example");
    const own = redirectUriFor(paths, "https://auth.example.com", false);
    expect(own).toBe(`${REDIRECT}/${issuerKey("https://auth.example.com")}`);
    expect(issuerKey("https://auth.example.com")).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(redirectUriFor(paths, "https://auth.example.com/", false)).not.toBe(own);
    expect(redirectUriFor(paths, "https://auth.example.com", true)).toBe(REDIRECT);
  });

  it("names the binding cookie __Host- over https and plainly on loopback http", () => {
    expect(bindingCookieName("oaf_1", true)).toBe("__Host-atrium-oauth-oaf_1");
    expect(bindingCookieName("oaf_1", false)).toBe("atrium-oauth-oaf_1");
  });
});
