import type { FetchLike } from "@modelcontextprotocol/client";
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

/** Authorities over a real fetch on 127.0.0.1, keeping a connection's discovery while `remembers`. */
function authoritiesOver(remembers: () => boolean, send: FetchLike = guarded()) {
  return new Authorities({
    publicUrl: () => "https://atrium.example",
    fetch: send,
    configured: [],
    registrations: NO_REGISTRATIONS,
    remembers,
  });
}

function guarded(): FetchLike {
  return guardedFetch({ allowPrivate: true, timeoutMs: 5_000, maxResponseBytes: 1024 * 1024 });
}

function notes() {
  return connectionRecord("ws_0123456789abcdef", {
    url: scripted.url,
    auth: { kind: "oauth", issuer: scripted.base, scopes: ["read"] },
  });
}

// A refresh under way when its connection was removed (Authorizer.forget) asked for its
// authority after the remove, and kept the removed connection's discovery for the process's life.
it("a connection's discovery is made once, and none is kept for a connection removed in this process", async () => {
  let discoveries = 0;
  scripted.beforeRequest = async (path) => {
    if (path === DISCOVERY) discoveries += 1;
  };
  let removed = false;
  const authorities = authoritiesOver(() => !removed);
  const record = notes();
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

// A sign-in's look that the stop had cut, already or as it joined, stopped waiting on a discovery
// that had answered and so cut it: the next step, a token refresh's included, discovered again
// (adr/0122, amended). A shared discovery carries no step's signal.
it.each([
  ["already aborted", "before"],
  ["aborted as it joins", "after"],
] as const)(
  "a step %s gets its own abort, and a discovery that has answered stays whole for the others",
  async (_, when) => {
    let discoveries = 0;
    scripted.beforeRequest = async (path) => {
      if (path === DISCOVERY) discoveries += 1;
    };
    const authorities = authoritiesOver(() => true);
    const record = notes();
    try {
      // A sign-in begins the discovery, and its answer is kept once given.
      await authorities.authority(record, PUBLIC_CLIENT, new AbortController().signal);
      const look = new AbortController();
      const reason = new Error("the sign-in's look was cut");
      if (when === "before") look.abort(reason);
      const step = authorities.authority(record, PUBLIC_CLIENT, look.signal);
      if (when === "after") look.abort(reason);
      await expect(step).rejects.toBe(reason);
      expect((await authorities.authority(record, PUBLIC_CLIENT)).target.issuer).toBe(scripted.base);
      expect(discoveries).toBe(1);
    } finally {
      scripted.beforeRequest = undefined;
    }
  },
);

// As a step begun after the stop: it sends nothing (until-stop.ts).
it("a step already aborted with no discovery to join starts none", async () => {
  const send = guarded();
  const sent: string[] = [];
  const authorities = authoritiesOver(
    () => true,
    (url, init) => {
      sent.push(String(url));
      return send(url, init);
    },
  );
  const look = new AbortController();
  const reason = new Error("the sign-in's look was cut");
  look.abort(reason);
  await expect(authorities.authority(notes(), PUBLIC_CLIENT, look.signal)).rejects.toBe(reason);
  expect(sent).toEqual([]);
});
