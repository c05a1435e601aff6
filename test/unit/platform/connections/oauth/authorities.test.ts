import { afterAll, beforeAll, expect, it } from "vitest";
import { Authorities } from "../../../../../src/platform/connections/oauth/authorities.ts";
import type {
  ClientRegistrations,
  IssuedTo,
} from "../../../../../src/platform/connections/oauth/client-identity.ts";
import { guardedFetch } from "../../../../../src/sources/guarded-fetch.ts";
import { connectionRecord } from "../../../../helpers/connections.ts";
import {
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../../../../helpers/scripted-oauth-server.ts";

// Where a connection's tokens come from, against a real authorization server on 127.0.0.1 that
// counts the discoveries it is asked for (the protected resource's metadata).

const DISCOVERY = "/.well-known/oauth-protected-resource/mcp";
/** A public client known by its metadata document: no registration is asked for. */
const PUBLIC_CLIENT: IssuedTo = {
  clientId: "https://atrium.example/connections/oauth/client-metadata.json",
  how: "metadata_document",
  redirectUri: "https://atrium.example/v1/connections/oauth/callback",
};
/** No step here registers a client. */
const NO_REGISTRATIONS: ClientRegistrations = {
  get: async () => undefined,
  getOrRegister: async () => {
    throw new Error("no registration is expected here");
  },
};

let scripted: ScriptedOAuthServer;

beforeAll(async () => {
  scripted = await startScriptedOAuthServer();
});

afterAll(async () => {
  await scripted?.close();
});

// A refresh under way when its connection was removed (Authorizer.forget) asked for its
// authority after the remove, and kept the removed connection's discovery for the process's life.
it("a connection's discovery is made once, and none is kept for a connection removed in this process", async () => {
  let discoveries = 0;
  scripted.beforeRequest = async (path) => {
    if (path === DISCOVERY) discoveries += 1;
  };
  let removed = false;
  const authorities = new Authorities({
    publicUrl: () => "https://atrium.example",
    fetch: guardedFetch({ allowPrivate: true, timeoutMs: 5_000, maxResponseBytes: 1024 * 1024 }),
    configured: [],
    registrations: NO_REGISTRATIONS,
    remembers: () => !removed,
  });
  const record = connectionRecord("ws_0123456789abcdef", {
    url: scripted.url,
    auth: { kind: "oauth", issuer: scripted.base, scopes: ["read"] },
  });
  try {
    await authorities.authority(record, PUBLIC_CLIENT);
    expect((await authorities.authority(record, PUBLIC_CLIENT)).target.issuer).toBe(scripted.base);
    expect(discoveries).toBe(1);
    authorities.forget(record);
    removed = true;
    // Late steps for the removed connection each discover for themselves, and keep nothing.
    await authorities.authority(record, PUBLIC_CLIENT);
    await authorities.authority(record, PUBLIC_CLIENT);
    expect(discoveries).toBe(3);
  } finally {
    scripted.beforeRequest = undefined;
  }
});
