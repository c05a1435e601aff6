import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClientMetadataDocuments } from "../../../src/oauth/client-metadata.ts";
import { ClientRegistry } from "../../../src/oauth/clients.ts";
import { UnusedClientCap } from "../../../src/oauth/unused-client-cap.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { silentLog, tempInstance, testClock } from "./fixtures.ts";
import { InvalidClientMetadataError } from "./oauth-error-kinds.ts";

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clients: ClientRegistry;

const NATIVE = { redirect_uris: ["http://127.0.0.1/callback"], client_name: "Native" };

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clients = new ClientRegistry(
    layout,
    new ClientMetadataDocuments({ allowPrivate: false }),
    silentLog,
    testClock(),
    new UnusedClientCap(Number.MAX_SAFE_INTEGER, () => false),
  );
});

afterEach(() => cleanup());

function oauthErrorOf(promise: Promise<unknown>): Promise<{ errorCode: string; message: string }> {
  return promise.then(
    () => {
      throw new Error("expected a refusal");
    },
    (error: { errorCode: string; message: string }) => error,
  );
}

describe("ClientRegistry", () => {
  it("registers a public client by default, with both grants and no secret", async () => {
    const client = await clients.register(NATIVE);
    expect(client.client_id).toMatch(/^atc_[0-9a-f]{32}$/);
    expect(client).toMatchObject({
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      client_id_issued_at: Math.floor(testClock()() / 1000),
    });
    expect(client.client_secret).toBeUndefined();
    expect(await clients.find(client.client_id, "127.0.0.1")).toEqual(client);
    expect(clients.allowsRefresh(client)).toBe(true);
    expect(await clients.storedName(client.client_id)).toBe(client.client_name);
    expect(await clients.storedName("atc_ffffffffffffffffffffffffffffffff")).toBeUndefined();
  });

  it("gives a confidential client its secret once and stores only a hash", async () => {
    const client = await clients.register({ ...NATIVE, token_endpoint_auth_method: "client_secret_basic" });
    const secret = client.client_secret as string;
    expect(secret.length).toBeGreaterThanOrEqual(43);
    expect(client.client_secret_expires_at).toBe(0);
    const file = await readFile(layout.collectionFile("oauth/clients", client.client_id), "utf8");
    expect(file).not.toContain(secret);
    const found = await clients.find(client.client_id, "127.0.0.1");
    expect(found?.client_secret).toBeUndefined();
    expect(JSON.stringify(found)).not.toMatch(/hash/i);
  });

  it("authenticates a confidential client only by its registered method and secret", async () => {
    const client = await clients.register({ ...NATIVE, token_endpoint_auth_method: "client_secret_post" });
    const secret = client.client_secret as string;
    const found = await clients.find(client.client_id, "127.0.0.1");
    if (!found) throw new Error("not found");
    expect(clients.authenticate(found, { method: "client_secret_post", secret })).toBe(true);
    expect(clients.authenticate(found, { method: "client_secret_post", secret: `${secret}x` })).toBe(false);
    expect(clients.authenticate(found, { method: "client_secret_basic", secret })).toBe(false);
    expect(clients.authenticate(found, { method: "none" })).toBe(false);
    // A copy of the client carries no proof: authentication works on what find returned.
    expect(clients.authenticate({ ...found }, { method: "client_secret_post", secret })).toBe(false);
  });

  it("authenticates a public client by client_id alone, and refuses one that sends a secret", async () => {
    const client = await clients.register(NATIVE);
    expect(clients.authenticate(client, { method: "none" })).toBe(true);
    expect(clients.authenticate(client, { method: "client_secret_post", secret: "x" })).toBe(false);
  });

  it("allows refresh only when the client registered the grant", async () => {
    const client = await clients.register({ ...NATIVE, grant_types: ["authorization_code"] });
    expect(clients.allowsRefresh(client)).toBe(false);
    expect(clients.allowsRefresh({ client_id: "x", redirect_uris: [] })).toBe(true);
  });

  it.each([
    [{}, "invalid_client_metadata", /redirect_uris is required/],
    [{ redirect_uris: [] }, "invalid_redirect_uri", /between 1 and/],
    [{ redirect_uris: ["http://example.com/cb"] }, "invalid_redirect_uri", /loopback/],
    [{ redirect_uris: ["https://a.example/cb#x"] }, "invalid_redirect_uri", /fragment/],
    [
      { ...NATIVE, grant_types: ["authorization_code", "client_credentials"] },
      "invalid_client_metadata",
      /client_credentials/,
    ],
    [{ ...NATIVE, grant_types: ["refresh_token"] }, "invalid_client_metadata", /authorization_code/],
    [{ ...NATIVE, response_types: ["token"] }, "invalid_client_metadata", /response_types/],
    [
      { ...NATIVE, token_endpoint_auth_method: "private_key_jwt" },
      "invalid_client_metadata",
      /private_key_jwt/,
    ],
    [{ redirect_uris: "https://a.example/cb" }, "invalid_client_metadata", /redirect_uris/],
    [{ ...NATIVE, client_uri: "javascript:alert(1)" }, "invalid_client_metadata", /client_uri/],
    [[], "invalid_client_metadata", /JSON object/],
  ])("refuses %j with %s", async (metadata, code, why) => {
    const error = await oauthErrorOf(clients.register(metadata));
    expect(error.errorCode).toBe(code);
    expect(error.message).toMatch(why);
    if (code === "invalid_client_metadata") expect(error).toBeInstanceOf(InvalidClientMetadataError);
  });

  it("finds nothing for ids it never issued, without touching the disk for malformed ones", async () => {
    expect(await clients.find("atc_ffffffffffffffffffffffffffffffff", "127.0.0.1")).toBeUndefined();
    expect(await clients.find("../../etc/passwd", "127.0.0.1")).toBeUndefined();
    expect(await clients.find("", "127.0.0.1")).toBeUndefined();
  });
});
