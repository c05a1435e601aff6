import { describe, expect, it } from "vitest";
import { parseAuthorizationRequest } from "../../../../src/oauth/authorize/authorization-request.ts";
import { OAuthError } from "../../../../src/oauth/oauth-error.ts";
import type { OAuthClientInformationFull } from "../../../../src/oauth/oauth-types.ts";

const PUBLIC_URL = "https://atrium.example";
const RESOURCE = `${PUBLIC_URL}/mcp/ws_0123456789abcdef`;
const CLIENT: OAuthClientInformationFull = {
  client_id: "atc_client",
  client_name: "Test client",
  redirect_uris: ["http://127.0.0.1:4000/callback", "https://app.example/cb"],
  token_endpoint_auth_method: "none",
};
const clients = { find: async (id: string) => (id === CLIENT.client_id ? CLIENT : undefined) };

function query(overrides: Record<string, string | undefined> = {}): URLSearchParams {
  const params: Record<string, string | undefined> = {
    client_id: CLIENT.client_id,
    redirect_uri: "https://app.example/cb",
    response_type: "code",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
    resource: RESOURCE,
    scope: "mcp:read",
    state: "s1",
    ...overrides,
  };
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, value);
  return search;
}

const parse = (overrides: Record<string, string | undefined> = {}) =>
  parseAuthorizationRequest(query(overrides), clients, PUBLIC_URL, "127.0.0.1");

describe("parseAuthorizationRequest", () => {
  it("accepts a complete request and names the workspace its resource is", async () => {
    const parsed = await parse();
    expect(parsed).toMatchObject({
      kind: "ok",
      request: { workspaceId: "ws_0123456789abcdef", scopes: ["mcp:read"], state: "s1", resource: RESOURCE },
    });
  });

  it("an unknown client or an unregistered redirect is shown to the person, never redirected", async () => {
    expect(await parse({ client_id: "nobody" })).toMatchObject({ kind: "show", status: 400 });
    expect(await parse({ redirect_uri: "https://evil.example/cb" })).toMatchObject({
      kind: "show",
      message: expect.stringContaining("not one this client registered"),
    });
  });

  it("a loopback redirect may use another port, but not another path", async () => {
    expect(await parse({ redirect_uri: "http://127.0.0.1:5555/callback" })).toMatchObject({ kind: "ok" });
    expect(await parse({ redirect_uri: "http://127.0.0.1:5555/other" })).toMatchObject({ kind: "show" });
  });

  it.each([
    ["plain PKCE", { code_challenge_method: "plain" }, "invalid_request"],
    ["no PKCE method (plain by default)", { code_challenge_method: undefined }, "invalid_request"],
    ["no code challenge", { code_challenge: undefined }, "invalid_request"],
    ["a missing resource", { resource: undefined }, "invalid_request"],
    ["a foreign resource", { resource: "https://other.example/mcp/ws_0123456789abcdef" }, "invalid_target"],
    ["a resource that is not a workspace URL", { resource: `${PUBLIC_URL}/v1/bootstrap` }, "invalid_target"],
    ["a resource with a trailing slash", { resource: `${RESOURCE}/` }, "invalid_target"],
    ["an unknown scope", { scope: "mcp:read admin" }, "invalid_scope"],
    ["a token response type", { response_type: "token" }, "unsupported_response_type"],
  ])("%s goes back to the client as %s, with its state", async (_label, overrides, error) => {
    expect(await parse(overrides)).toMatchObject({
      kind: "redirect",
      error,
      state: "s1",
      redirectUri: "https://app.example/cb",
    });
  });

  /** The complete request with `name` sent a second time, with the same value. */
  const parseRepeating = (name: string) => {
    const search = query();
    search.append(name, search.get(name) ?? "x");
    return parseAuthorizationRequest(search, clients, PUBLIC_URL, "127.0.0.1");
  };

  it.each(["client_id", "redirect_uri"])(
    "a repeated %s is shown to the person: where to send an error is not established",
    async (name) => {
      expect(await parseRepeating(name)).toEqual({
        kind: "show",
        status: 400,
        message: `The ${name} parameter is repeated; the application must send it once.`,
      });
    },
  );

  it.each(["state", "response_type", "code_challenge", "code_challenge_method", "scope"])(
    "a repeated %s goes back as invalid_request saying so, never read as left out",
    async (name) => {
      expect(await parseRepeating(name)).toEqual({
        kind: "redirect",
        redirectUri: "https://app.example/cb",
        state: name === "state" ? undefined : "s1",
        error: "invalid_request",
        description: `The ${name} parameter is repeated.`,
      });
    },
  );

  it("several resources, which RFC 8707 allows, are invalid_target: a token here is for one workspace", async () => {
    expect(await parseRepeating("resource")).toEqual({
      kind: "redirect",
      redirectUri: "https://app.example/cb",
      state: "s1",
      error: "invalid_target",
      description: "A token here is for one workspace: send one resource, its MCP URL.",
    });
  });

  it("a parameter sent without a value is left out (RFC 6749 §3.1): an empty redirect_uri or state", async () => {
    const oneRedirect = { find: async () => ({ ...CLIENT, redirect_uris: ["https://app.example/cb"] }) };
    const emptyRedirect = query({ redirect_uri: "" });
    expect(
      await parseAuthorizationRequest(emptyRedirect, oneRedirect, PUBLIC_URL, "127.0.0.1"),
    ).toMatchObject({
      kind: "ok",
      request: { redirectUri: "https://app.example/cb", redirectUriOmitted: true },
    });
    expect(await parse({ state: "", code_challenge_method: "plain" })).toMatchObject({
      kind: "redirect",
      state: undefined,
    });
  });

  it("a repeated parameter this endpoint does not read is ignored, as any unknown one is", async () => {
    const search = query();
    search.append("prompt", "consent");
    search.append("prompt", "login");
    expect(await parseAuthorizationRequest(search, clients, PUBLIC_URL, "127.0.0.1")).toMatchObject({
      kind: "ok",
    });
  });

  it("a client that cannot be used says why only when the reason is an OAuth error; any other fault is not shown", async () => {
    const failing = (error: Error) => ({
      find: async () => {
        throw error;
      },
    });
    const refused = new OAuthError(
      "invalid_client",
      "The client metadata document at https://app.example/c is not a JSON object.",
    );
    expect(await parseAuthorizationRequest(query(), failing(refused), PUBLIC_URL, "127.0.0.1")).toEqual({
      kind: "show",
      status: 400,
      message: `The client "atc_client" could not be used: ${refused.message}`,
    });
    // An fs fault names a path under the data root: left to the one error mapping, which logs it
    // and answers its generic line; the page no longer shows it.
    const fault = new Error("EACCES: permission denied, open '/srv/atrium/_instance/oauth/clients/x.json'");
    await expect(parseAuthorizationRequest(query(), failing(fault), PUBLIC_URL, "127.0.0.1")).rejects.toBe(
      fault,
    );
  });
});
