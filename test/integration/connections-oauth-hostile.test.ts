import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { bootstrapWorkspace, type TestAtrium } from "../helpers/atrium.ts";
import { callTool, connectionView } from "../helpers/connections.ts";
import { startConnectionsAtrium } from "../helpers/connections-atrium.ts";
import { FakeTime } from "../helpers/fake-time.ts";
import {
  authorizeByHand,
  deliverByHand,
  goUrlIn,
  openGoUrl,
  type ScriptedOAuthServer,
  startScriptedOAuthServer,
} from "../helpers/scripted-oauth-server.ts";

// OAuth connections against a server whose answers a test rewrites (test/helpers/scripted-oauth-server.ts):
// what a hostile or odd authorization server or MCP server says is held to the rules an admin is.
// No browser: the go_url and the callback are driven by hand with the binding cookie.

const time = new FakeTime(Date.now());
let instance: TestAtrium;
let server: ScriptedOAuthServer;
let ws: string;

beforeAll(async () => {
  server = await startScriptedOAuthServer();
  instance = await startConnectionsAtrium("atrium-connections-oauth-hostile-", time, createLogger("silent"), {
    healthIntervalSeconds: 3600,
    credentialCheckIntervalSeconds: 86_400,
  });
  ws = await bootstrapWorkspace(instance, "alice");
});

afterAll(async () => {
  await instance?.stop();
  await server?.close();
});

beforeEach(() => {
  server.challengeScope = "read";
  server.stepUpScope = "read write";
});

function add(name: string, auth: Record<string, unknown> = { kind: "oauth", scopes: ["read"] }) {
  return instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, { name, url: server.url, auth });
}

async function connected(name: string): Promise<void> {
  const response = await add(name);
  expect(response.status).toBe(201);
  const { go_url } = (await response.json()) as { go_url: string };
  expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
}

const EIGHTY_SCOPES = Array.from({ length: 80 }, (_, i) => `s${i}`).join(" ");

describe("scopes the server asks for are held to the rules an admin's are", () => {
  it("a 403 insufficient_scope naming 80 scopes answers a readable tool error and starts no step-up", async () => {
    await connected("scope-flood");
    server.stepUpScope = EIGHTY_SCOPES;
    const refused = await callTool(instance, ws, "scope-flood__needs_more");
    expect(refused.isError).toBe(true);
    const text = refused.content?.[0]?.text ?? "";
    expect(text).toContain("will not request");
    expect(goUrlIn(text)).toBeUndefined();
    expect(text).not.toContain("s79");
    const view = await connectionView<{ state: string; auth: { scopes: string[] } }>(
      instance,
      ws,
      "scope-flood",
    );
    expect(view).toMatchObject({ state: "running", auth: { scopes: ["read"] } });
    // A challenge within the rules still steps up, to the union.
    server.stepUpScope = "read write";
    const stepUp = goUrlIn((await callTool(instance, ws, "scope-flood__needs_more")).content?.[0]?.text);
    expect((await authorizeByHand(instance, "alice", stepUp as string)).status).toBe(200);
    expect((await callTool(instance, ws, "scope-flood__needs_more")).isError).toBeFalsy();
  });

  it("a 401 challenge naming 80 scopes refuses an add without scopes, and nothing is stored", async () => {
    server.challengeScope = EIGHTY_SCOPES;
    const response = await add("default-flood", { kind: "oauth" });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("auth.scopes");
    expect(
      (await instance.rest("alice", "GET", `/v1/workspaces/${ws}/connections/default-flood`)).status,
    ).toBe(404);
  });
});

describe("mix-up: a hostile authorization server sending the browser to an honest one", () => {
  // RFC 9700 §4.4: H's metadata names H as issuer with H's token endpoint, but sends the browser
  // to the honest server A, with the client_id Atrium has at A. Neither promises RFC 9207 `iss`.
  // Were A's answer accepted for H's flow, A's code and the PKCE verifier would be posted to H,
  // which would redeem them at A for the admin's token. A checks redirect URIs, as it must.
  let honest: ScriptedOAuthServer;
  let atriumAtHonest: { clientId: string; redirectUri: string };
  let stolen: string[];
  let formsBefore: number;
  const codesPostedToHostile = () =>
    server.tokenForms.slice(formsBefore).filter((form) => form.get("grant_type") === "authorization_code");

  beforeAll(async () => {
    honest = await startScriptedOAuthServer();
    const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "honest",
      url: honest.url,
      auth: { kind: "oauth", scopes: ["read"] },
    });
    const { go_url } = (await response.json()) as { go_url: string };
    expect((await authorizeByHand(instance, "alice", go_url)).status).toBe(200);
    const [clientId, redirectUris] = [...honest.clients][0] as [string, string[]];
    atriumAtHonest = { clientId, redirectUri: redirectUris[0] as string };
  });

  afterAll(async () => {
    await honest?.close();
  });

  beforeEach(() => {
    stolen = [];
    formsBefore = server.tokenForms.length;
    // H hands Atrium the client_id it has at A, and replays whatever code reaches it at A.
    server.register = (body) =>
      Response.json({ ...body, client_id: atriumAtHonest.clientId }, { status: 201 });
    server.token = async (form) => {
      if (form.get("grant_type") === "authorization_code") {
        const atHonest = await honest.honestToken(form);
        const { access_token } = (await atHonest.json()) as { access_token?: string };
        if (access_token) stolen.push(access_token);
      }
      return server.honestToken(form);
    };
  });

  afterEach(() => {
    server.metadata = {};
    delete server.register;
    delete server.token;
    delete server.authorize;
  });

  async function addHostile(name: string): Promise<string> {
    const response = await add(name);
    expect(response.status).toBe(201);
    return ((await response.json()) as { go_url: string }).go_url;
  }

  it("sent to A as is, the request names H's own callback, which A refuses for Atrium's client there", async () => {
    server.metadata = { authorization_endpoint: `${honest.base}/authorize` };
    // Atrium registered at A with A's own callback, not the shared one.
    expect(new URL(atriumAtHonest.redirectUri).pathname).toMatch(
      /^\/v1\/connections\/oauth\/callback\/[\w-]{22}$/,
    );
    const goUrl = await addHostile("mix-up-direct");
    const landing = await authorizeByHand(instance, "alice", goUrl);
    expect(landing).toMatchObject({ status: 0, text: expect.stringContaining("redirect_uri") });
    expect(stolen).toEqual([]);
    expect(codesPostedToHostile()).toEqual([]);
    expect((await connectionView<{ state: string }>(instance, ws, "mix-up-direct")).state).toBe(
      "pending_auth",
    );
  });

  it("rewritten to A's callback on the way, A's answer arrives where H's flow does not expect it: 400, no code to H", async () => {
    server.authorize = (url) => {
      const toHonest = new URL(`${honest.base}/authorize${url.search}`);
      toHonest.searchParams.set("redirect_uri", atriumAtHonest.redirectUri);
      return new Response(null, { status: 302, headers: { location: toHonest.href } });
    };
    const goUrl = await addHostile("mix-up-rewritten");
    const { location, cookie } = await openGoUrl(instance, "alice", goUrl);
    const viaHostile = await fetch(location, { redirect: "manual" });
    const atHonest = await fetch(String(viaHostile.headers.get("location")), { redirect: "manual" });
    const back = new URL(String(atHonest.headers.get("location")));
    expect(back.href.startsWith(atriumAtHonest.redirectUri)).toBe(true);
    const landing = await deliverByHand(instance, "alice", cookie, back);
    expect({ status: landing.status, stolen }).toEqual({ status: 400, stolen: [] });
    expect(landing.text).toContain("mix-up");
    expect(codesPostedToHostile()).toEqual([]);
    expect((await connectionView<{ state: string }>(instance, ws, "mix-up-rewritten")).state).toBe(
      "pending_auth",
    );
  });
});

describe("a token endpoint that quotes what it was sent", () => {
  // A registration that issued a client secret, sent in the form (client_secret_post): a careless
  // server's 401 repeats the form, which the client library quotes as the "raw body".
  it("a failed code exchange is told by its kind: the page shows neither the client secret, the code nor the verifier", async () => {
    const quoting = await startScriptedOAuthServer();
    const clientSecret = `cs-${"7f3a".repeat(6)}`;
    try {
      quoting.metadata = { token_endpoint_auth_methods_supported: ["client_secret_post"] };
      quoting.register = (body) => {
        quoting.clients.set("client-with-secret", (body.redirect_uris as string[]) ?? []);
        return Response.json(
          {
            ...body,
            client_id: "client-with-secret",
            client_secret: clientSecret,
            token_endpoint_auth_method: "client_secret_post",
          },
          { status: 201 },
        );
      };
      quoting.token = (form) =>
        new Response(`refused client_secret=${form.get("client_secret")} for ${form.toString()}`, {
          status: 401,
        });
      const response = await instance.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
        name: "quotes",
        url: quoting.url,
        auth: { kind: "oauth", scopes: ["read"] },
      });
      const { go_url } = (await response.json()) as { go_url: string };
      const landing = await authorizeByHand(instance, "alice", go_url);
      expect(landing.status).toBe(502);
      const sent = quoting.tokenForms.at(-1);
      expect(sent?.get("client_secret")).toBe(clientSecret);
      for (const value of [clientSecret, sent?.get("code"), sent?.get("code_verifier")])
        expect(landing.text).not.toContain(value);
      expect(landing.text).toContain("server_error");
    } finally {
      await quoting.close();
    }
  });
});

describe("an authorization server that sends the browser back with words of its own", () => {
  const WORDS =
    "Your Atrium session has ended \u202Eevil\u202C: sign in again at https://atrium-login.example";

  /** The go_url's authorization request, answered by hand at its callback with `params`. */
  async function answered(name: string, params: Record<string, string>) {
    const response = await add(name);
    const { go_url } = (await response.json()) as { go_url: string };
    const { location, cookie } = await openGoUrl(instance, "alice", go_url);
    const back = new URL(location.searchParams.get("redirect_uri") as string);
    back.searchParams.set("state", location.searchParams.get("state") as string);
    for (const [key, value] of Object.entries(params)) back.searchParams.set(key, value);
    return deliverByHand(instance, "alice", cookie, back);
  }

  it("an error_description is not repeated: the refusal is told by its OAuth code alone", async () => {
    const page = await answered("says-things", { error: "access_denied", error_description: WORDS });
    expect(page.status).toBe(400);
    expect(page.text).toContain("access_denied");
    expect(page.text).not.toContain("atrium-login.example");
    expect(page.text).not.toContain("\u202E");
  });

  it("an error that is not an OAuth code is told as server_error", async () => {
    const page = await answered("says-more", { error: WORDS.replaceAll(" ", "_") });
    expect(page.status).toBe(400);
    expect(page.text).toContain("server_error");
    expect(page.text).not.toContain("atrium-login");
    expect(page.text).not.toContain("\u202E");
  });

  it("a wrong iss is refused without quoting it", async () => {
    const page = await answered("wrong-iss", {
      code: "c0de",
      iss: "https://atrium-login.example/sign-in-again",
    });
    expect(page.status).toBe(400);
    expect(page.text).toContain("RFC 9207");
    expect(page.text).not.toContain("atrium-login.example");
  });
});
