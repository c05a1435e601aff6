import { createHash, randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { expect } from "vitest";
import * as z from "zod";
import type { RawResponse, TestAtrium } from "./atrium.ts";

/**
 * A small OAuth authorization server and OAuth-protected MCP server in one, on 127.0.0.1, whose
 * every answer a test can rewrite while it runs — to play a hostile or merely odd server. No
 * browser: an authorization is consented to at once (authorizeByHand). Honest by default, and
 * strict where an honest server must be: open dynamic registration, an exact redirect URI match
 * for the client (RFC 6749 §3.1.2.3; a mismatch is a 400 page, never a redirect), PKCE S256 and
 * single-use codes; it sends no RFC 9207 `iss` and does not promise one, like most servers.
 * test/helpers/oauth-remote-server.ts is the full-featured one (oidc-provider, Chromium).
 */
export interface ScriptedOAuthServer {
  /** Its origin and issuer, `http://127.0.0.1:<port>`. */
  base: string;
  /** The MCP endpoint and protected resource, `<base>/mcp`. */
  url: string;
  /** Merged over the authorization-server metadata (e.g. another `authorization_endpoint`). */
  metadata: Record<string, unknown>;
  /** The `scope` of the 401 challenge (default `read`). */
  challengeScope: string;
  /** What `needs_more` requires: a 403 insufficient_scope naming it unless the token holds all of it. */
  stepUpScope: string;
  /** The `expires_in` of issued access tokens, seconds (default 3600); `undefined` to leave it out. */
  expiresIn: number | undefined;
  /** Replaces the token endpoint when set (the honest one is `honestToken`). */
  token?: (form: URLSearchParams) => Response | Promise<Response>;
  /** Replaces the registration endpoint's answer when set. */
  register?: (body: Record<string, unknown>) => Response | Promise<Response>;
  /** Replaces the authorization endpoint when set. */
  authorize?: (url: URL) => Response | Promise<Response>;
  /**
   * Told the JSON-RPC `method` of each authorized MCP request before it is answered; the request
   * waits for it, so a test can hold one where it wants.
   */
  beforeMcp?: (method: string | undefined) => Promise<void>;
  /**
   * Told the path of every request before it is routed, with a signal that aborts once the client
   * hangs up; the request waits for it, so a test can hold a discovery, registration or token request.
   */
  beforeRequest?: (path: string, hungUp: AbortSignal) => Promise<void>;
  /** The honest token endpoint. */
  honestToken(form: URLSearchParams): Promise<Response>;
  /** Every form the token endpoint received. */
  tokenForms: URLSearchParams[];
  /** Clients registered here (dynamically or by `addClient`), by id: their redirect URIs. */
  clients: Map<string, string[]>;
  close(): Promise<void>;
}

export async function startScriptedOAuthServer(): Promise<ScriptedOAuthServer> {
  let issued = 0;
  const codes = new Map<
    string,
    { clientId: string; redirectUri: string; challenge: string; scope: string }
  >();
  const accessTokens = new Map<string, string[]>();
  const refreshTokens = new Map<string, string[]>();
  const server = {
    metadata: {},
    challengeScope: "read",
    stepUpScope: "read write",
    expiresIn: 3600,
    tokenForms: [],
    clients: new Map<string, string[]>(),
  } as unknown as ScriptedOAuthServer;

  function tokens(scope: string): Response {
    issued += 1;
    const access = `access-${issued}`;
    const refresh = `refresh-${issued}`;
    const scopes = scope.split(" ").filter(Boolean);
    accessTokens.set(access, scopes);
    refreshTokens.set(refresh, scopes);
    return Response.json({
      access_token: access,
      token_type: "Bearer",
      refresh_token: refresh,
      scope,
      ...(server.expiresIn === undefined ? {} : { expires_in: server.expiresIn }),
    });
  }

  server.honestToken = async (form) => {
    if (form.get("grant_type") === "refresh_token") {
      const scopes = refreshTokens.get(form.get("refresh_token") ?? "");
      if (!scopes) return Response.json({ error: "invalid_grant" }, { status: 400 });
      return tokens(scopes.join(" "));
    }
    const code = codes.get(form.get("code") ?? "");
    codes.delete(form.get("code") ?? "");
    const verifier = form.get("code_verifier") ?? "";
    if (
      !code ||
      code.clientId !== form.get("client_id") ||
      code.redirectUri !== form.get("redirect_uri") ||
      code.challenge !== createHash("sha256").update(verifier).digest("base64url")
    ) {
      return Response.json({ error: "invalid_grant" }, { status: 400 });
    }
    return tokens(code.scope);
  };

  function honestAuthorize(url: URL): Response {
    const q = url.searchParams;
    const clientId = q.get("client_id") ?? "";
    const redirectUri = q.get("redirect_uri") ?? "";
    if (!server.clients.get(clientId)?.includes(redirectUri)) {
      return new Response("unknown client or redirect_uri not registered for it", { status: 400 });
    }
    const code = `code-${randomBytes(8).toString("hex")}`;
    codes.set(code, {
      clientId,
      redirectUri,
      challenge: q.get("code_challenge") ?? "",
      scope: q.get("scope") ?? "",
    });
    const back = new URL(redirectUri);
    back.searchParams.set("code", code);
    back.searchParams.set("state", q.get("state") ?? "");
    return new Response(null, { status: 302, headers: { location: back.href } });
  }

  const handler = createMcpHandler(() => {
    const mcp = new McpServer({ name: "scripted-oauth-server", version: "1.0.0" });
    mcp.registerTool(
      "echo",
      { description: "echo", inputSchema: { text: z.string() } },
      async ({ text }) => ({
        content: [{ type: "text", text }],
      }),
    );
    mcp.registerTool("needs_more", { description: "needs the step-up scope" }, async () => ({
      content: [{ type: "text", text: "done" }],
    }));
    return mcp;
  });

  async function serveMcp(request: Request): Promise<Response> {
    const token = request.headers.get("authorization")?.replace(/^Bearer /i, "") ?? "";
    const scopes = accessTokens.get(token);
    if (!scopes) {
      return new Response("{}", {
        status: 401,
        headers: {
          "www-authenticate": `Bearer resource_metadata="${server.base}/.well-known/oauth-protected-resource/mcp", scope="${server.challengeScope}"`,
        },
      });
    }
    const text = await request.text();
    await server.beforeMcp?.(methodOf(text));
    const required = server.stepUpScope.split(" ");
    if (text.includes('"needs_more"') && !required.every((scope) => scopes.includes(scope))) {
      return new Response("{}", {
        status: 403,
        headers: { "www-authenticate": `Bearer error="insufficient_scope", scope="${server.stepUpScope}"` },
      });
    }
    return handler.fetch(new Request(request.url, { method: "POST", headers: request.headers, body: text }));
  }

  const http = serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const url = new URL(request.url);
      await server.beforeRequest?.(url.pathname, request.signal);
      switch (url.pathname) {
        case "/mcp":
          return serveMcp(request);
        case "/.well-known/oauth-protected-resource/mcp":
          return Response.json({ resource: server.url, authorization_servers: [server.base] });
        case "/.well-known/oauth-authorization-server":
          return Response.json({
            issuer: server.base,
            authorization_endpoint: `${server.base}/authorize`,
            token_endpoint: `${server.base}/token`,
            registration_endpoint: `${server.base}/register`,
            response_types_supported: ["code"],
            code_challenge_methods_supported: ["S256"],
            ...server.metadata,
          });
        case "/register": {
          const body = (await request.json()) as Record<string, unknown>;
          if (server.register) return server.register(body);
          const clientId = `client-${server.clients.size + 1}`;
          server.clients.set(clientId, (body.redirect_uris as string[]) ?? []);
          return Response.json({ ...body, client_id: clientId }, { status: 201 });
        }
        case "/authorize":
          return server.authorize ? server.authorize(url) : honestAuthorize(url);
        case "/token": {
          const form = new URLSearchParams(await request.text());
          server.tokenForms.push(form);
          return server.token ? server.token(form) : server.honestToken(form);
        }
        default:
          return new Response("no such route", { status: 404 });
      }
    },
  });
  await new Promise<void>((resolve) => http.once("listening", () => resolve()));
  server.base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  server.url = `${server.base}/mcp`;
  server.close = () =>
    new Promise<void>((resolve) => {
      (http as Server).closeAllConnections();
      http.close(() => resolve());
    });
  return server;
}

/** Opens a go_url as `user` without a browser: where it redirects, and the binding cookie it set. */
export async function openGoUrl(
  instance: TestAtrium,
  user: string,
  goUrl: string,
): Promise<{ location: URL; cookie: string }> {
  const go = await instance.raw(user, "GET", new URL(goUrl).pathname);
  expect(go.status, go.text).toBe(302);
  const cookie = String(go.headers["set-cookie"] ?? "").split(";")[0] ?? "";
  return { location: new URL(String(go.headers.location)), cookie };
}

/** Delivers an authorization response (`callback`, the URL the authorization server redirected to) as `user`. */
export function deliverByHand(
  instance: TestAtrium,
  user: string,
  cookie: string,
  callback: URL,
): Promise<RawResponse> {
  return instance.raw(user, "GET", `${callback.pathname}${callback.search}`, { headers: { cookie } });
}

/**
 * Opens the go_url as `user`, consents at the authorization server (which answers at once) and
 * delivers its answer to Atrium's callback: Atrium's answer. A server that does not redirect
 * back (it refused the request) is answered as `{ status: 0, text }` with its page.
 */
export async function authorizeByHand(
  instance: TestAtrium,
  user: string,
  goUrl: string,
): Promise<{ status: number; text: string }> {
  const { location, cookie } = await openGoUrl(instance, user, goUrl);
  const atServer = await fetch(location, { redirect: "manual" });
  const back = atServer.headers.get("location");
  if (atServer.status !== 302 || back === null) return { status: 0, text: await atServer.text() };
  const landing = await deliverByHand(instance, user, cookie, new URL(back));
  return { status: landing.status, text: landing.text };
}

/** The go_url a tool error (a step-up) hands out. */
export function goUrlIn(text: string | undefined): string | undefined {
  return /(http:\/\/\S+\/v1\/connections\/oauth\/go\/oaf_[0-9a-f]{32})/.exec(text ?? "")?.[1];
}

function methodOf(body: string): string | undefined {
  try {
    const method = (JSON.parse(body) as { method?: unknown }).method;
    return typeof method === "string" ? method : undefined;
  } catch {
    return undefined;
  }
}
