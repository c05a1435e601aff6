import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import {
  authorize,
  consentRequestId,
  decide,
  pkcePair,
  REDIRECT_URI,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";

// ADR 0156: a client ID metadata document is fetched for /oauth/authorize only once its person
// has signed in, and charged to that person. Any page can make a visitor's browser send signed-out
// authorization GETs (an <img> carries no SameSite=Lax cookie); fetched and charged to the
// address, they spent its allowance and the next real sign-in from it was refused.

const FETCHES_PER_HOUR = 3;

let t: TestAtrium;
let workspaceId: string;
let documents: Server;
let documentBase: string;
let fetches = 0;

beforeAll(async () => {
  documents = createServer((req, res) => {
    fetches += 1;
    // Never cached, so every resolution of it is a fetch the allowance must count.
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(
      JSON.stringify({
        client_id: `${documentBase}${req.url}`,
        client_name: "Document client",
        redirect_uris: [REDIRECT_URI],
      }),
    );
  });
  await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
  documentBase = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
  t = await startTestAtrium({
    sections: {
      oauth: {
        clientMetadataFetchesPerHour: FETCHES_PER_HOUR,
        clientMetadataDocuments: { allowPrivateAddresses: true },
      },
    },
  });
  workspaceId = await bootstrapWorkspace(t, "alice");
});

afterAll(async () => {
  documents?.closeAllConnections();
  await new Promise((resolve) => documents?.close(resolve));
  await t?.stop();
});

/** A real client's sign-in from this address: consent, approval and the code exchange. */
async function signInWith(cookie: string, clientId: string): Promise<Response> {
  const { verifier, challenge } = pkcePair();
  const consent = await authorize(t, cookie, { clientId, workspaceId, challenge });
  expect(consent.status, await consent.clone().text()).toBe(200);
  const decision = await decide(t, cookie, consentRequestId(await consent.text()), "approve");
  const code = new URL(decision.headers.get("location") as string).searchParams.get("code") as string;
  return tokenRequest(t, {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    code_verifier: verifier,
  });
}

describe("client metadata document fetches at /oauth/authorize", () => {
  it("a flood of signed-out requests naming many documents fetches none, and a real sign-in from the same address goes through", async () => {
    const before = fetches;
    for (let n = 0; n < 4 * FETCHES_PER_HOUR; n++) {
      const response = await authorize(t, undefined, {
        clientId: `${documentBase}/flood-${n}.json`,
        workspaceId,
        challenge: pkcePair().challenge,
      });
      expect(response.status).toBe(303);
      expect(new URL(response.headers.get("location") as string, t.url).pathname).toBe("/auth/login");
    }
    expect(fetches).toBe(before);
    const cookie = await sessionCookie(t, "alice");
    const exchanged = await signInWith(cookie, `${documentBase}/real.json`);
    expect(exchanged.status).toBe(200);
  });

  it("a signed-in person's fetches are charged to them: another person at the same address spending theirs does not stop them", async () => {
    const bob = await sessionCookie(t, "bob");
    const before = fetches;
    let refused: Response | undefined;
    for (let n = 0; n <= FETCHES_PER_HOUR && refused === undefined; n++) {
      const response = await authorize(t, bob, {
        clientId: `${documentBase}/bob-${n}.json`,
        workspaceId,
        challenge: pkcePair().challenge,
      });
      if (response.status === 429) refused = response;
    }
    expect(refused?.status).toBe(429);
    expect(await refused?.text()).toMatch(/Too many client metadata documents/);
    // Bounded: no more fetches than the allowance, however many requests.
    expect(fetches - before).toBe(FETCHES_PER_HOUR);
    const alice = await sessionCookie(t, "alice");
    const consent = await authorize(t, alice, {
      clientId: `${documentBase}/alice-app.json`,
      workspaceId,
      challenge: pkcePair().challenge,
    });
    expect(consent.status).toBe(200);
  });
});
