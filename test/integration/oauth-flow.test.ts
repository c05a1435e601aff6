import { mkdir, rm, writeFile as writeFileOnDisk } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import { generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERNAL_ERROR_MESSAGE } from "../../src/http/error-response.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { addMember } from "../helpers/members.ts";
import {
  authorize,
  authorizeQuery,
  consentRequestId,
  decide,
  mcpPost,
  obtainTokens,
  pkcePair,
  REDIRECT_URI,
  registerClient,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";

let t: TestAtrium;
let aliceWs: string;
let bobWs: string;

beforeAll(async () => {
  t = await startTestAtrium();
  aliceWs = await bootstrapWorkspace(t, "alice");
  bobWs = await bootstrapWorkspace(t, "bob");
});
afterAll(() => t?.stop());

const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
const writeFile = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "files__write", arguments: { name: "a.txt", text: "hi" } },
};

function location(response: Response): URL {
  return new URL(response.headers.get("location") as string);
}

/** The "Return to the application" link of a problem page. */
function wayBack(page: string): URL {
  const href = /<a class="button" href="([^"]+)">Return to the application<\/a>/.exec(page)?.[1];
  if (href === undefined) throw new Error(`no way back on the page: ${page}`);
  return new URL(href.replaceAll("&amp;", "&"));
}

describe("authorize: what is refused, and how", () => {
  let cookie: string;
  let clientId: string;
  beforeAll(async () => {
    cookie = await sessionCookie(t, "alice");
    clientId = (await registerClient(t)).client_id;
  });

  it("a browser without a session is sent to sign in, and back to this very request", async () => {
    const response = await authorize(t, undefined, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    expect(response.status).toBe(303);
    const target = new URL(response.headers.get("location") as string, t.url);
    expect(target.pathname).toBe("/auth/login");
    expect(target.searchParams.get("return_to")).toMatch(/^\/oauth\/authorize\?/);
  });

  it("a request too long to carry through sign-in is kept, and sign-in comes back to it", async () => {
    const state = "s".repeat(1800);
    const response = await authorize(t, undefined, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
      state,
    });
    expect(response.status).toBe(303);
    const login = new URL(response.headers.get("location") as string, t.url);
    const returnTo = login.searchParams.get("return_to") as string;
    expect(returnTo).toMatch(/^\/oauth\/authorize\/resume\/[A-Za-z0-9_-]{32}$/);
    // Signed in by then, the browser is sent back to the kept request and asked for consent.
    const back = await fetch(login, { redirect: "manual", headers: { cookie } });
    expect(back.headers.get("location")).toBe(returnTo);
    const consent = await fetch(new URL(returnTo, t.url), { headers: { cookie } });
    expect(consent.status).toBe(200);
    const decision = await decide(t, cookie, consentRequestId(await consent.text()), "approve");
    expect(location(decision).searchParams.get("state")).toBe(state);
    expect(location(decision).searchParams.get("code")).toEqual(expect.any(String));
  });

  it("oauth.parkedRequestsPerHour bounds how many long requests one address parks an hour", async () => {
    const strict = await startTestAtrium({ sections: { oauth: { parkedRequestsPerHour: 1 } } });
    try {
      const ws = await bootstrapWorkspace(strict, "alice");
      const client = (await registerClient(strict)).client_id;
      const long = () =>
        authorize(strict, undefined, {
          clientId: client,
          workspaceId: ws,
          challenge: pkcePair().challenge,
          state: "s".repeat(1800),
        });
      expect((await long()).status).toBe(303);
      const refused = await long();
      expect(refused.status).toBe(503);
      expect(await refused.text()).toContain("Sign in first at /auth/login");
    } finally {
      await strict.stop();
    }
  });

  it("a kept request that is unknown or gone asks the person to start again", async () => {
    const response = await fetch(`${t.url}/oauth/authorize/resume/${"x".repeat(32)}`, {
      headers: { cookie },
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("start again from the application");
  });

  it.each([
    ["plain PKCE", { code_challenge_method: "plain" }, "invalid_request"],
    ["a missing resource", { resource: undefined }, "invalid_request"],
    [
      "a foreign resource",
      { resource: "https://elsewhere.example/mcp/ws_0123456789abcdef" },
      "invalid_target",
    ],
    ["an unknown scope", { scope: "mcp:admin" }, "invalid_scope"],
    ["a response type other than code", { response_type: "token" }, "unsupported_response_type"],
  ])(
    "%s is refused with %s on a page whose link back carries state and iss",
    async (_label, overrides, error) => {
      const response = await authorize(t, cookie, {
        clientId,
        workspaceId: aliceWs,
        challenge: pkcePair().challenge,
        overrides,
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      const back = wayBack(await response.text());
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
      expect(back.searchParams.get("error")).toBe(error);
      expect(back.searchParams.get("state")).toBe("state-1");
      expect(back.searchParams.get("iss")).toBe(t.url);
    },
  );

  /** GET /oauth/authorize with `name` sent twice, both times with the value it has once. */
  async function authorizeRepeating(name: string, scope?: string): Promise<Response> {
    const query = authorizeQuery(t, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
      scope,
    });
    const again = new URLSearchParams({ [name]: new URLSearchParams(query).get(name) as string });
    return fetch(`${t.url}/oauth/authorize?${query}&${again}`, { redirect: "manual", headers: { cookie } });
  }

  it.each(["client_id", "redirect_uri"])(
    "a repeated %s is shown to the person with no link back: where it would go is not established",
    async (name) => {
      const response = await authorizeRepeating(name);
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      const page = await response.text();
      expect(page).toContain(`The ${name} parameter is repeated`);
      expect(page).not.toContain("Return to the application");
    },
  );

  it.each(["scope", "response_type", "code_challenge", "code_challenge_method", "state"])(
    "a repeated %s is refused with invalid_request, never read as left out (RFC 6749 §3.1)",
    async (name) => {
      // A repeated read-only scope was read as no scope, the default mcp:read mcp:write.
      const response = await authorizeRepeating(name, "mcp:read");
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      const back = wayBack(await response.text());
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
      expect(back.searchParams.get("error")).toBe("invalid_request");
      expect(back.searchParams.get("error_description")).toBe(`The ${name} parameter is repeated.`);
      // Neither of two states is the client's, so none is carried back.
      expect(back.searchParams.get("state")).toBe(name === "state" ? null : "state-1");
    },
  );

  it("several resources (RFC 8707 allows them) are refused with invalid_target: a token is for one workspace", async () => {
    const response = await authorizeRepeating("resource", "mcp:read");
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    const back = wayBack(await response.text());
    expect(back.searchParams.get("error")).toBe("invalid_target");
    expect(back.searchParams.get("state")).toBe("state-1");
  });

  it("a refused request never bounces a browser to a client's redirect URI on its own, signed in or not", async () => {
    // Anyone may register a client with their own redirect URI: were refusals followed, a link to
    // this instance would carry a signed-out stranger's browser straight to that site.
    const phishing = "https://phishing.example/landing";
    const stranger = (await registerClient(t, { client_name: "x", redirect_uris: [phishing] })).client_id;
    for (const session of [undefined, cookie]) {
      const response = await authorize(t, session, {
        clientId: stranger,
        workspaceId: aliceWs,
        challenge: pkcePair().challenge,
        redirectUri: phishing,
        overrides: { response_type: "x" },
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      const page = await response.text();
      expect(page).toContain("The link goes to <bdi>phishing.example</bdi>.");
      expect(wayBack(page).origin).toBe("https://phishing.example");
    }
  });

  it("an unregistered redirect URI is shown to the person and never followed", async () => {
    const response = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
      redirectUri: "https://evil.example/callback",
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(await response.text()).toContain("not one this client registered");
  });

  it("a client record that cannot be read is answered with a generic line, never the file's path", async () => {
    const { client_id: broken } = await registerClient(t);
    // A folder where its file should be: reading it fails (EISDIR), whoever runs the test.
    const file = join(t.root, "_instance", "oauth", "clients", `${broken}.json`);
    await rm(file);
    await mkdir(file);
    const response = await authorize(t, undefined, {
      clientId: broken,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    // Before, the page said "could not be used: <root>/_instance/oauth/clients/…", to anyone,
    // signed in or not.
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(text).toContain(INTERNAL_ERROR_MESSAGE);
    expect(text).not.toContain(t.root);
    expect(text).not.toContain("_instance");
  });

  it("a client record that is not JSON is answered as an unknown client (ADR 0137)", async () => {
    const { client_id: broken } = await registerClient(t);
    await writeFileOnDisk(join(t.root, "_instance", "oauth", "clients", `${broken}.json`), "{");
    const response = await authorize(t, undefined, {
      clientId: broken,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain("is registered here; the application must register again");
    expect(text).not.toContain(t.root);
  });

  it("a person who is not a member of the workspace gets no consent page, only access_denied", async () => {
    const response = await authorize(t, cookie, {
      clientId,
      workspaceId: bobWs,
      challenge: pkcePair().challenge,
    });
    expect(response.status).toBe(403);
    const page = await response.text();
    expect(page).not.toContain('name="request"');
    expect(page).toContain("error=access_denied");
  });

  it("the consent page names the client, the workspace, the person and the scopes, and cannot be framed", async () => {
    const response = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain("Test MCP client");
    expect(page).toContain("alice&#39;s workspace");
    expect(page).toContain("alice@example.test");
    expect(page).toContain("mcp:write");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });

  it("the consent page names the app a private-use redirect goes to, not the host it wears", async () => {
    const evil = "com.evil.app://claude.ai/callback";
    const registered = await registerClient(t, { client_name: "Claude", redirect_uris: [evil] });
    const response = await authorize(t, cookie, {
      clientId: registered.client_id,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
      redirectUri: evil,
    });
    expect(response.status).toBe(200);
    const shown = /<dt>It will be sent back to<\/dt><dd>(.*?)<\/dd>/s.exec(await response.text())?.[1];
    expect(shown).toBe(`the app that opens com.evil.app: links (${evil})`);
  });

  it("a repeated identical decision is idempotent; a conflicting one is refused", async () => {
    const consent = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    const id = consentRequestId(await consent.text());
    const first = await decide(t, cookie, id, "approve");
    const again = await decide(t, cookie, id, "approve");
    expect(first.status).toBe(303);
    expect(location(again).searchParams.get("code")).toBe(location(first).searchParams.get("code"));
    expect((await decide(t, cookie, id, "deny")).status).toBe(409);
  });

  it("denying sends access_denied back; only the person asked can decide", async () => {
    const consent = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    const id = consentRequestId(await consent.text());
    const bobCookie = await sessionCookie(t, "bob");
    expect((await decide(t, bobCookie, id, "approve")).status).toBe(403);
    const denied = await decide(t, cookie, id, "deny");
    expect(location(denied).searchParams.get("error")).toBe("access_denied");
  });

  it("a form not sent as a page sends it is refused with 415, never a 500; a real decision still works", async () => {
    const consent = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    const id = consentRequestId(await consent.text());
    const post = (contentType: string, body: string) =>
      fetch(`${t.url}/oauth/authorize`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, origin: t.url, "content-type": contentType },
        body,
      });
    // hono's parseBody() threw on these: a 500 anyone could cause, signed in or not.
    expect((await post("multipart/form-data", "x")).status).toBe(415);
    expect((await post("multipart/form-data; boundary=zz", "garbage")).status).toBe(415);
    const multipart = new FormData();
    multipart.set("request", id);
    multipart.set("decision", "approve");
    const sentAsMultipart = await fetch(`${t.url}/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: t.url },
      body: multipart,
    });
    expect(sentAsMultipart.status).toBe(415);
    // Bytes that do not decode are only an unknown request.
    expect(
      (await post("application/x-www-form-urlencoded", "request=%E0%A4%A&decision=approve")).status,
    ).toBe(400);
    // None of that decided anything: the person's own answer is still the first.
    const approved = await decide(t, cookie, id, "approve");
    expect(approved.status).toBe(303);
    expect(location(approved).searchParams.get("code")).toBeTruthy();
  });

  it("a client metadata document at a private address is refused", async () => {
    const server: Server = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({ client_id: documentUrl, client_name: "Local", redirect_uris: [REDIRECT_URI] }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const documentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client.json`;
    try {
      const response = await authorize(t, cookie, {
        clientId: documentUrl,
        workspaceId: aliceWs,
        challenge: pkcePair().challenge,
      });
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
    } finally {
      server.close();
    }
  });
});

describe("tokens at /mcp/ws_…", () => {
  it("a token works at its workspace and is refused at another, with a challenge to follow", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    const ok = await mcpPost(t, aliceWs, tokens.access_token, listTools);
    expect(ok.status).toBe(200);

    const aliceSecond = (await (
      await t.rest("alice", "POST", "/v1/workspaces", { name: "Second" })
    ).json()) as {
      id: string;
    };
    const elsewhere = await mcpPost(t, aliceSecond.id, tokens.access_token, listTools);
    expect(elsewhere.status).toBe(401);
    const challenge = elsewhere.headers.get("www-authenticate") as string;
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain(
      `resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp/${aliceSecond.id}"`,
    );
  });

  it("a call without a credential gets 401 pointing at this workspace's resource metadata", async () => {
    const response = await fetch(`${t.url}/mcp/${aliceWs}`, { method: "POST", body: "{}" });
    expect(response.status).toBe(401);
    const challenge = response.headers.get("www-authenticate") as string;
    expect(challenge).toContain(
      `resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp/${aliceWs}"`,
    );
    const metadata = (await (
      await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp/${aliceWs}`)
    ).json()) as { resource: string; authorization_servers: string[] };
    expect(metadata.resource).toBe(`${t.url}/mcp/${aliceWs}`);
    expect(metadata.authorization_servers).toEqual([t.url]);
  });

  it("a read-only token lists and reads, and gets 403 insufficient_scope for a write, naming both scopes", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs, { scope: "mcp:read" });
    expect((await mcpPost(t, aliceWs, tokens.access_token, listTools)).status).toBe(200);
    const write = await mcpPost(t, aliceWs, tokens.access_token, writeFile);
    expect(write.status).toBe(403);
    const challenge = write.headers.get("www-authenticate") as string;
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="mcp:read mcp:write"');
    expect(challenge).toContain(
      `resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp/${aliceWs}"`,
    );
  });

  it("a token stops working at a workspace once its person is removed from it", async () => {
    await addMember(t.rest.bind(t), "bob", bobWs, "alice", { principalId: testPrincipal("alice").id });
    const tokens = await obtainTokens(t, "alice", bobWs);
    expect((await mcpPost(t, bobWs, tokens.access_token, writeFile)).status).toBe(200);
    const aliceId = testPrincipal("alice").id;
    expect((await t.rest("bob", "DELETE", `/v1/workspaces/${bobWs}/members/${aliceId}`)).status).toBe(204);
    // Removal revokes her grant for this URL, so the token is no credential at all any more.
    const refused = await mcpPost(t, bobWs, tokens.access_token, listTools);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("tampered tokens are refused: alg none, a foreign key, a foreign issuer", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    const [, payload] = tokens.access_token.split(".");
    const claims = JSON.parse(Buffer.from(payload as string, "base64url").toString()) as Record<
      string,
      unknown
    >;
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url")}.${payload}.`;

    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const kid = JSON.parse(Buffer.from(tokens.access_token.split(".")[0] as string, "base64url").toString())
      .kid as string;
    const foreignKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid })
      .sign(privateKey);
    const foreignIssuer = await new SignJWT({ ...claims, iss: "https://evil.example" })
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid })
      .sign(privateKey);

    for (const token of [none, foreignKey, foreignIssuer, `${tokens.access_token}x`]) {
      const response = await mcpPost(t, aliceWs, token, listTools);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toContain('error="invalid_token"');
    }
  });

  it("an Atrium access token is not a REST credential", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    const response = await fetch(`${t.url}/v1/workspaces`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(response.status).toBe(401);
  });
});

describe("codes and refresh tokens", () => {
  it("a code is single use, and its reuse revokes what it issued", async () => {
    const cookie = await sessionCookie(t, "alice");
    const { client_id: clientId } = await registerClient(t);
    const { verifier, challenge } = pkcePair();
    const consent = await authorize(t, cookie, { clientId, workspaceId: aliceWs, challenge });
    const decision = await decide(t, cookie, consentRequestId(await consent.text()), "approve");
    const code = location(decision).searchParams.get("code") as string;
    expect(location(decision).searchParams.get("iss")).toBe(t.url);
    const exchange = {
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      code_verifier: verifier,
      resource: `${t.url}/mcp/${aliceWs}`,
    };
    const first = await tokenRequest(t, exchange);
    expect(first.status).toBe(200);
    const tokens = (await first.json()) as { access_token: string; refresh_token: string };
    const second = await tokenRequest(t, exchange);
    expect(second.status).toBe(400);
    expect(((await second.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await mcpPost(t, aliceWs, tokens.access_token, listTools)).status).toBe(401);
    const refresh = await tokenRequest(t, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    expect(((await refresh.json()) as { error: string }).error).toBe("invalid_grant");
  });

  it("a redirect_uri left out at authorize may be left out at the token endpoint (OAuth 2.1 §4.1.3)", async () => {
    const cookie = await sessionCookie(t, "alice");
    const { client_id: clientId } = await registerClient(t);
    const { verifier, challenge } = pkcePair();
    const consent = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge,
      overrides: { redirect_uri: undefined },
    });
    const decision = await decide(t, cookie, consentRequestId(await consent.text()), "approve");
    expect(`${location(decision).origin}${location(decision).pathname}`).toBe(REDIRECT_URI);
    const exchanged = await tokenRequest(t, {
      grant_type: "authorization_code",
      code: location(decision).searchParams.get("code") as string,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(exchanged.status).toBe(200);
  });

  it("a refresh token rotates; presenting one rotated out before the last rotation revokes the whole family", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    const refresh = (token: string) =>
      tokenRequest(t, { grant_type: "refresh_token", refresh_token: token, client_id: tokens.clientId });
    const rotated = await refresh(tokens.refresh_token as string);
    expect(rotated.status).toBe(200);
    const between = (await rotated.json()) as { access_token: string; refresh_token: string };
    expect(between.refresh_token).not.toBe(tokens.refresh_token);
    expect((await mcpPost(t, aliceWs, between.access_token, listTools)).status).toBe(200);
    // Not the token just replaced, which its client may retry for oauth.refreshReuseGraceSeconds (ADR 0136).
    const next = (await (await refresh(between.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };

    const replay = await refresh(tokens.refresh_token as string);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await refresh(next.refresh_token)).status).toBe(400);
    expect((await mcpPost(t, aliceWs, next.access_token, listTools)).status).toBe(401);
  });

  it("what the authorization server holds survives a restart", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    // The restarted instance listens on another port, so its URLs (issuer, audiences)
    // differ; the stored signing keys, clients and grants are what must carry over.
    t = await t.restart();
    const { kid } = JSON.parse(
      Buffer.from(tokens.access_token.split(".")[0] as string, "base64url").toString(),
    );
    expect(t.atrium.oauth.keys.jwks().keys.map((key) => key.kid)).toContain(kid);
    const refreshed = await tokenRequest(t, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
      client_id: tokens.clientId,
    });
    expect(refreshed.status).toBe(200);
  });
});

describe("after the public URL changes", () => {
  /** The claims of an access token, read without checking it. */
  const claimsOf = (token: string) =>
    JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as {
      aud: string;
      gid: string;
    };

  it("a refresh issues a token for the workspace's new MCP URL, and leaving and archiving revoke the old grants", async () => {
    let moved = await startTestAtrium({ publicUrl: "http://127.0.0.1:8787" });
    try {
      const ws = await bootstrapWorkspace(moved, "alice");
      await addMember(moved.rest.bind(moved), "alice", ws, "bob", { principalId: testPrincipal("bob").id });
      const alices = await obtainTokens(moved, "alice", ws);
      const bobs = await obtainTokens(moved, "bob", ws);
      const oldUrl = `${moved.url}/mcp/${ws}`;
      expect(claimsOf(alices.access_token).aud).toBe(oldUrl);

      moved = await moved.restart({ publicUrl: "http://127.0.0.1:8788" });
      const newUrl = `${moved.url}/mcp/${ws}`;
      expect(newUrl).not.toBe(oldUrl);
      const refreshed = await tokenRequest(moved, {
        grant_type: "refresh_token",
        refresh_token: alices.refresh_token as string,
        client_id: alices.clientId,
      });
      expect(refreshed.status).toBe(200);
      const { access_token: accessToken, refresh_token: refreshToken } = (await refreshed.json()) as {
        access_token: string;
        refresh_token: string;
      };
      // Before: the stored URL, which /mcp refused, so the client refreshed again without end.
      expect(claimsOf(accessToken).aud).toBe(newUrl);
      expect((await mcpPost(moved, ws, accessToken, listTools)).status).toBe(200);
      // The consented URL is still accepted as the resource a refresh names.
      const namingOld = await tokenRequest(moved, {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: alices.clientId,
        resource: oldUrl,
      });
      expect(namingOld.status).toBe(200);
      const listed = (await (await moved.rest("alice", "GET", "/v1/oauth/grants")).json()) as {
        grants: Array<{ resource: string; workspaceId: string }>;
      };
      expect(listed.grants).toEqual([expect.objectContaining({ resource: newUrl, workspaceId: ws })]);

      // Removal and archive match the grant by workspace, not by the URL of the day.
      const bobId = testPrincipal("bob").id;
      expect((await moved.rest("alice", "DELETE", `/v1/workspaces/${ws}/members/${bobId}`)).status).toBe(204);
      expect(moved.atrium.oauth.grants.isRevoked(claimsOf(bobs.access_token).gid)).toBe(true);
      expect(moved.atrium.oauth.grants.isRevoked(claimsOf(alices.access_token).gid)).toBe(false);
      expect((await moved.rest("alice", "DELETE", `/v1/workspaces/${ws}`)).status).toBe(204);
      expect(moved.atrium.oauth.grants.isRevoked(claimsOf(alices.access_token).gid)).toBe(true);
    } finally {
      await moved.stop();
    }
  });
});

describe("under the dev provider", () => {
  it("sign-in is implicit, consent is still asked, and the token works beside credential-less calls", async () => {
    const dev = await startTestAtrium({ dev: true });
    try {
      const login = await fetch(`${dev.url}/auth/login`, { redirect: "manual" });
      expect(login.status).toBe(303);
      const cookie = (login.headers.get("set-cookie") as string).split(";")[0] as string;
      const workspaceId = await bootstrapWorkspace(dev, null);
      const { challenge } = pkcePair();
      const clientId = (await registerClient(dev)).client_id;
      const consent = await authorize(dev, cookie, { clientId, workspaceId, challenge });
      expect(consent.status).toBe(200);
      expect(await consent.text()).toContain("Local Developer");

      const tokens = await obtainTokens(dev, "developer", workspaceId, { cookie });
      expect((await mcpPost(dev, workspaceId, tokens.access_token, listTools)).status).toBe(200);
      // Any other credential is refused, never read as "no credential, so the developer".
      const forged = await mcpPost(dev, workspaceId, "not.an.atrium-token", listTools);
      expect(forged.status).toBe(401);
    } finally {
      await dev.stop();
    }
  });
});

describe("a browser session", () => {
  it("changes nothing for a page on another origin, even a loopback one the origin guard lets through", async () => {
    const cookie = await sessionCookie(t, "alice");
    const create = (origin?: string, contentType = "text/plain") =>
      fetch(`${t.url}/v1/workspaces`, {
        method: "POST",
        headers: { cookie, "content-type": contentType, ...(origin ? { origin } : {}) },
        body: JSON.stringify({ name: "From a page" }),
      });
    const foreign = await create("http://127.0.0.1:9");
    expect(foreign.status).toBe(403);
    // A CORS-simple text/plain body is not read as JSON even from Atrium's own origin (ADR 0026).
    expect((await create(t.url)).status).toBe(415);
    expect((await create(t.url, "application/json")).status).toBe(201);
    // Reading is not an action: a GET with the cookie from anywhere the guard admits is served.
    const read = await fetch(`${t.url}/v1/workspaces`, { headers: { cookie, origin: "http://127.0.0.1:9" } });
    expect(read.status).toBe(200);
  });

  it("approves nothing from another origin", async () => {
    const cookie = await sessionCookie(t, "alice");
    const { client_id: clientId } = await registerClient(t);
    const consent = await authorize(t, cookie, {
      clientId,
      workspaceId: aliceWs,
      challenge: pkcePair().challenge,
    });
    const id = consentRequestId(await consent.text());
    const forged = await fetch(`${t.url}/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: "http://localhost:9" },
      body: new URLSearchParams({ request: id, decision: "approve" }).toString(),
    });
    expect(forged.status).toBe(403);
    expect((await decide(t, cookie, id, "approve")).status).toBe(303);
  });
});

describe("step-up with the SDK client", () => {
  it("a read-only token's write gets a 403 the SDK client follows to ask for mcp:write", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs, { scope: "mcp:read" });
    let authorizationUrl: URL | undefined;
    // A client that holds a read-only token (and no refresh token, so re-authorizing is its only way up).
    const provider = {
      redirectUrl: REDIRECT_URI,
      clientMetadata: { redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" },
      clientInformation: () => ({ client_id: tokens.clientId }),
      tokens: () => ({ access_token: tokens.access_token, token_type: "Bearer" }),
      saveTokens: () => {},
      redirectToAuthorization: (url: URL) => {
        authorizationUrl = url;
      },
      saveCodeVerifier: () => {},
      codeVerifier: () => "",
    };
    const client = new Client({ name: "step-up", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${aliceWs}`), { authProvider: provider }),
    );
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await expect(
      client.callTool({ name: "files__write", arguments: { name: "b.txt", text: "x" } }),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    expect(authorizationUrl?.searchParams.get("scope")).toBe("mcp:read mcp:write");
    expect(authorizationUrl?.searchParams.get("resource")).toBe(`${t.url}/mcp/${aliceWs}`);
    await client.close();
  });
});

describe("a person's authorized applications", () => {
  it("lists what each client may do where, and revoking one ends its tokens; nobody else can", async () => {
    const tokens = await obtainTokens(t, "alice", aliceWs);
    const list = async (user: string) =>
      (
        (await (await t.rest(user, "GET", "/v1/oauth/grants")).json()) as {
          grants: Array<{
            id: string;
            clientId: string;
            clientName: string;
            workspaceId: string;
            scopes: string[];
          }>;
        }
      ).grants;
    const mine = (await list("alice")).find((grant) => grant.clientId === tokens.clientId);
    expect(mine).toMatchObject({
      clientName: "Test MCP client",
      workspaceId: aliceWs,
      scopes: ["mcp:read", "mcp:write"],
    });
    expect((await list("bob")).some((grant) => grant.id === mine?.id)).toBe(false);

    expect((await t.rest("bob", "DELETE", `/v1/oauth/grants/${mine?.id}`)).status).toBe(404);
    expect((await mcpPost(t, aliceWs, tokens.access_token, listTools)).status).toBe(200);
    expect((await t.rest("alice", "DELETE", `/v1/oauth/grants/${mine?.id}`)).status).toBe(204);
    expect((await mcpPost(t, aliceWs, tokens.access_token, listTools)).status).toBe(401);
    const refresh = await tokenRequest(t, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
      client_id: tokens.clientId,
    });
    expect(refresh.status).toBe(400);
    expect((await list("alice")).some((grant) => grant.id === mine?.id)).toBe(false);
    expect((await t.rest("alice", "DELETE", `/v1/oauth/grants/${mine?.id}`)).status).toBe(404);
  });
});
