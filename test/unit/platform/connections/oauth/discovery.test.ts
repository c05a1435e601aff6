import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  AuthorizationRefused,
  discoverAuthorization,
} from "../../../../../src/platform/connections/oauth/discovery.ts";
import {
  beginAuthorization,
  checkResponseIssuer,
  WrongIssuer,
} from "../../../../../src/platform/connections/oauth/tokens.ts";
import { guardedFetch } from "../../../../../src/sources/guarded-fetch.ts";
import { localTarget, serveLocally } from "../../../../helpers/local-http.ts";

// Discovery against a small server on 127.0.0.1 that is both the MCP server and its
// authorization server, with each document a test can break.

interface Documents {
  challenge?: string | null;
  resource?: Record<string, unknown> | null;
  authorization?: Record<string, unknown> | null;
}

let server: { base: string; close(): Promise<void> } | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Serves the documents `make` builds for the server's own address; `null` is a 404. */
async function serve(make: (base: string) => Documents): Promise<string> {
  let documents: Documents = {};
  server = await serveLocally((request) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    const json = (body: Record<string, unknown> | null | undefined) =>
      body ? { status: 200, json: body } : { status: 404 };
    if (path === "/mcp") {
      const challenge = documents.challenge;
      const headers: Record<string, string> = challenge ? { "www-authenticate": challenge } : {};
      return { status: 401, headers };
    }
    if (path === "/meta/resource" || path === "/.well-known/oauth-protected-resource/mcp")
      return json(documents.resource);
    if (path === "/.well-known/oauth-authorization-server") return json(documents.authorization);
    return { status: 404 };
  });
  documents = make(server.base);
  return server.base;
}

function honest(base: string): Documents {
  return {
    challenge: `Bearer resource_metadata="${base}/meta/resource", scope="files:read"`,
    resource: {
      resource: `${base}/mcp`,
      authorization_servers: [base],
      scopes_supported: ["files:read", "files:write"],
    },
    authorization: localTarget(base, { authorization_response_iss_parameter_supported: true }).metadata,
  };
}

describe("discoverAuthorization", () => {
  it("follows the challenge's resource_metadata to the authorization server, with the challenged scope", async () => {
    const base = await serve(honest);
    const target = await discoverAuthorization(`${base}/mcp`, fetch);
    expect(target).toMatchObject({
      resource: `${base}/mcp`,
      issuer: base,
      challengedScope: "files:read",
      scopesSupported: ["files:read", "files:write"],
    });
  });

  it("falls back to the well-known path when the 401 names no metadata", async () => {
    const base = await serve((b) => ({ ...honest(b), challenge: "Bearer" }));
    expect((await discoverAuthorization(`${base}/mcp`, fetch)).issuer).toBe(base);
  });

  it("refuses a server without protected-resource metadata", async () => {
    const base = await serve((b) => ({ ...honest(b), challenge: null, resource: null }));
    await expect(discoverAuthorization(`${base}/mcp`, fetch)).rejects.toThrow(AuthorizationRefused);
  });

  it("refuses metadata that names another resource", async () => {
    const base = await serve((b) => ({
      ...honest(b),
      resource: { resource: "https://elsewhere.example/mcp", authorization_servers: [b] },
    }));
    await expect(discoverAuthorization(`${base}/mcp`, fetch)).rejects.toThrow(/names another resource/);
  });

  it("refuses metadata that names no authorization server", async () => {
    const base = await serve((b) => ({ ...honest(b), resource: { resource: `${b}/mcp` } }));
    await expect(discoverAuthorization(`${base}/mcp`, fetch)).rejects.toThrow(/no authorization server/);
  });

  it("refuses an authorization server whose metadata names another issuer", async () => {
    const base = await serve((b) => ({
      ...honest(b),
      authorization: { ...honest(b).authorization, issuer: "https://attacker.example" },
    }));
    await expect(discoverAuthorization(`${base}/mcp`, fetch)).rejects.toThrow(/another issuer/);
  });

  it("refuses an authorization server that does not list S256, and one that lists no methods at all", async () => {
    const plainOnly = await serve((b) => ({
      ...honest(b),
      authorization: { ...honest(b).authorization, code_challenge_methods_supported: ["plain"] },
    }));
    await expect(discoverAuthorization(`${plainOnly}/mcp`, fetch)).rejects.toThrow(/S256/);
    await server?.close();
    const none = await serve((b) => {
      const { code_challenge_methods_supported: _dropped, ...rest } = honest(b).authorization as Record<
        string,
        unknown
      >;
      return { ...honest(b), authorization: rest };
    });
    await expect(discoverAuthorization(`${none}/mcp`, fetch)).rejects.toThrow(/S256/);
  });

  it("refuses, within the request deadline, metadata whose body stalls after its headers", async () => {
    const stalling = createServer((request, response) => {
      request.resume();
      if (new URL(request.url ?? "/", "http://x").pathname === "/mcp") {
        response.writeHead(401, { "www-authenticate": 'Bearer resource_metadata="/meta"' }).end();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"resource":');
    });
    await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve));
    server = {
      base: `http://127.0.0.1:${(stalling.address() as AddressInfo).port}`,
      close: () =>
        new Promise((resolve) => {
          stalling.closeAllConnections();
          stalling.close(() => resolve());
        }),
    };
    const guarded = guardedFetch({ allowPrivate: true, timeoutMs: 300, maxResponseBytes: 1024 * 1024 });
    const started = Date.now();
    await expect(discoverAuthorization(`${server.base}/mcp`, guarded)).rejects.toThrow(
      /did not answer within 300 ms/,
    );
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe("the authorization request and response", () => {
  it("asks with PKCE S256, state, scope and the resource", async () => {
    const base = await serve(honest);
    const target = await discoverAuthorization(`${base}/mcp`, fetch);
    const { authorizationUrl, codeVerifier } = await beginAuthorization(
      target,
      { info: { client_id: "atc_1" }, how: "registered" },
      { redirectUri: "http://127.0.0.1:1/cb", state: "st4te", scope: "files:read" },
    );
    const params = authorizationUrl.searchParams;
    expect(params.get("code_challenge_method")).toBe("S256");
    expect(params.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get("code_challenge")).not.toBe(codeVerifier);
    expect(params.get("state")).toBe("st4te");
    expect(params.get("scope")).toBe("files:read");
    expect(params.get("resource")).toBe(`${base}/mcp`);
  });

  it("refuses a wrong iss, and a missing one from a server that promises it (RFC 9207)", async () => {
    const base = await serve(honest);
    const target = await discoverAuthorization(`${base}/mcp`, fetch);
    expect(() => checkResponseIssuer(target, base)).not.toThrow();
    expect(() => checkResponseIssuer(target, "https://attacker.example")).toThrow(WrongIssuer);
    expect(() => checkResponseIssuer(target, undefined)).toThrow(WrongIssuer);
    const silent = {
      ...target,
      metadata: { ...target.metadata, authorization_response_iss_parameter_supported: false },
    };
    expect(() => checkResponseIssuer(silent, undefined)).not.toThrow();
    expect(() => checkResponseIssuer(silent, "https://attacker.example")).toThrow(WrongIssuer);
  });
});

describe("a redirect during discovery", () => {
  // Many front ends answer an unknown path with a redirect to a login page on another host.
  async function serveRedirecting(mcpRedirects: boolean): Promise<string> {
    const local = createServer((request, response) => {
      const path = request.url ?? "/";
      const base = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
      const json = (body: unknown) =>
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      const login = () => response.writeHead(302, { location: "https://login.example.com/?next=x" }).end();
      if (path === "/mcp") return mcpRedirects ? login() : response.writeHead(401).end();
      if (path === "/.well-known/oauth-protected-resource/mcp") return login();
      if (path === "/.well-known/oauth-protected-resource")
        return json({ resource: `${base}/mcp`, authorization_servers: [`${base}/`] });
      if (path === "/.well-known/oauth-authorization-server")
        return json({
          issuer: `${base}/`,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          response_types_supported: ["code"],
          code_challenge_methods_supported: ["S256"],
        });
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    server = { base: "", close: () => new Promise((resolve) => local.close(() => resolve())) };
    return `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
  }
  const fetch = guardedFetch({ allowPrivate: true, timeoutMs: 5000, maxResponseBytes: 65536 });

  it("at a well-known metadata URL is a candidate not there: the root URL is tried next", async () => {
    const base = await serveRedirecting(false);
    const target = await discoverAuthorization(`${base}/mcp`, fetch);
    expect(target.resource).toBe(`${base}/mcp`);
    expect(target.issuer).toBe(`${base}/`);
  });

  it("from the server itself is still refused, not followed", async () => {
    const base = await serveRedirecting(true);
    await expect(discoverAuthorization(`${base}/mcp`, fetch)).rejects.toThrow(
      /redirect, which Atrium does not follow/,
    );
  });
});
