import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approveAsDeveloper } from "../../../scripts/lib/dev-consent.mjs";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../../helpers/atrium.ts";
import { pkcePair, registerClient, tokenRequest } from "../../helpers/oauth.ts";

// The conformance harness plays the person at the browser for the suite's
// authorization-code-grant scenario (scripts/conformance.mjs --suite authorization); this pins
// that it gets through Atrium's real sign-in and consent pages under `dev`.

let t: TestAtrium;
let workspaceId: string;
let callback: Server;
let callbackUrl: string;
const delivered: string[] = [];

beforeAll(async () => {
  t = await startTestAtrium({ dev: true });
  workspaceId = await bootstrapWorkspace(t, null);
  callback = createServer((req, res) => {
    delivered.push(req.url ?? "");
    res.end("OK");
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
});
afterAll(async () => {
  await new Promise((resolve) => callback?.close(resolve));
  await t?.stop();
});

// The request the suite builds: no scope, S256 PKCE, the workspace URL as resource.
function suiteRequest(clientId: string, challenge: string, redirectUri = callbackUrl): string {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    state: "suite-state",
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: `${t.url}/mcp/${workspaceId}`,
  });
  return `${t.url}/oauth/authorize?${query}`;
}

describe("approveAsDeveloper", () => {
  it("signs in, approves the consent page and delivers a code the client can redeem", async () => {
    const { client_id } = await registerClient(t, { redirect_uris: [callbackUrl] });
    const { verifier, challenge } = pkcePair();
    const location = await approveAsDeveloper(suiteRequest(client_id, challenge), t.url);

    const back = new URL(location);
    expect(`${back.origin}${back.pathname}`).toBe(callbackUrl);
    expect(delivered).toContain(`${back.pathname}${back.search}`);
    expect(back.searchParams.get("state")).toBe("suite-state");
    expect(back.searchParams.get("iss")).toBe(t.url);
    const token = await tokenRequest(t, {
      grant_type: "authorization_code",
      code: back.searchParams.get("code") ?? "",
      redirect_uri: callbackUrl,
      client_id,
      code_verifier: verifier,
      resource: `${t.url}/mcp/${workspaceId}`,
    });
    expect(token.status).toBe(200);
  });

  it("says so when Atrium shows an error page instead of consent", async () => {
    const { client_id } = await registerClient(t, { redirect_uris: [callbackUrl] });
    const unregistered = suiteRequest(client_id, pkcePair().challenge, "http://127.0.0.1:1/elsewhere");
    await expect(approveAsDeveloper(unregistered, t.url)).rejects.toThrow(
      /GET \/oauth\/authorize answered 400 instead of a consent page/,
    );
  });

  it("refuses to follow the flow to another origin", async () => {
    await expect(approveAsDeveloper("http://127.0.0.1:1/oauth/authorize?x=1", t.url)).rejects.toThrow(
      /left Atrium before consent/,
    );
  });
});
