import { afterEach, beforeEach } from "vitest";
import { startTestAtrium, type TestAtrium, testPrincipal } from "../helpers/atrium.ts";
import { obtainTokens, sessionCookie } from "../helpers/oauth.ts";
import { describeWall, type WallPeople } from "./wall-suite.ts";

// The wall tests with people told apart by the test provider's `x-test-user` header, on a
// fresh instance per test. test/integration/wall-signed-in.test.ts runs the same tests with
// people signed in through a real OpenID provider.

let instance: TestAtrium;

beforeEach(async () => {
  instance = await startTestAtrium();
});

afterEach(async () => {
  await instance?.stop();
});

function headerPeople(t: TestAtrium): WallPeople {
  return {
    url: t.url,
    atrium: t.atrium,
    id: (name) => testPrincipal(name).id,
    email: (name) => testPrincipal(name).email as string,
    async signIn(name) {
      // Under the test provider a person's first request is their arrival.
      const response = await t.rest(name, "GET", "/v1/workspaces");
      if (response.status !== 200) throw new Error(`${name}'s first request: HTTP ${response.status}`);
    },
    sessionCookie: (name) => sessionCookie(t, name),
    accessToken: async (name, workspaceId) => (await obtainTokens(t, name, workspaceId)).access_token,
    rest: (name, method, path, body, headers) => t.rest(name, method, path, body, headers),
    mcp: (name, workspaceId, { headers, body }) => t.rest(name, "POST", `/mcp/${workspaceId}`, body, headers),
    mcpClient: (name, workspaceId, era) => t.mcpClient(name, workspaceId, { era }),
  };
}

describeWall("header", () => headerPeople(instance));
