import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StorageLayout } from "../../src/storage/paths.ts";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import {
  authorize,
  consentRequestId,
  decide,
  pkcePair,
  registerClient,
  sessionCookie,
} from "../helpers/oauth.ts";

// Security 8 of issue 10: every GET /oauth/authorize by a signed-in person wrote a consent
// request file, and any web page can make a signed-in browser issue that GET by navigation.

let t: TestAtrium;
let workspaceId: string;
let cookie: string;
let clientId: string;

beforeAll(async () => {
  t = await startTestAtrium();
  workspaceId = await bootstrapWorkspace(t, "alice");
  cookie = await sessionCookie(t, "alice");
  clientId = (await registerClient(t)).client_id;
});
afterAll(() => t?.stop());

async function storedRequests(): Promise<string[]> {
  const folder = new StorageLayout(t.root).collectionDir("oauth/requests");
  return readdir(folder).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
}

describe("consent requests cost nothing until they are answered", () => {
  it("showing the consent page many times writes no file", async () => {
    for (let i = 0; i < 50; i++) {
      const page = await authorize(t, cookie, { clientId, workspaceId, challenge: pkcePair().challenge });
      expect(page.status).toBe(200);
      await page.body?.cancel();
    }
    expect(await storedRequests()).toEqual([]);
  });

  it("an answer stores one decision, and answering again gives the same redirect", async () => {
    const page = await authorize(t, cookie, { clientId, workspaceId, challenge: pkcePair().challenge });
    const request = consentRequestId(await page.text());
    const first = await decide(t, cookie, request, "approve");
    const again = await decide(t, cookie, request, "approve");
    expect(first.status).toBe(303);
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(await storedRequests()).toHaveLength(1);
    expect((await decide(t, cookie, request, "deny")).status).toBe(409);
  });

  it("a consent request altered in the page is refused and stores nothing", async () => {
    const page = await authorize(t, cookie, { clientId, workspaceId, challenge: pkcePair().challenge });
    const request = consentRequestId(await page.text());
    const before = await storedRequests();
    const [body = "", mac = ""] = request.split(".");
    const claims = JSON.parse(Buffer.from(body, "base64url").toString()) as Record<string, unknown>;
    const widened = Buffer.from(
      JSON.stringify({ ...claims, scopes: ["mcp:read", "mcp:write", "offline_access"] }),
    );
    const refused = await decide(t, cookie, `${widened.toString("base64url")}.${mac}`, "approve");
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("start again from the application");
    expect(await storedRequests()).toEqual(before);
  });
});
