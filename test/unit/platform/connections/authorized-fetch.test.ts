import { afterAll, beforeAll, expect, it } from "vitest";
import type { OAuthBearers } from "../../../../src/platform/connections/remote.ts";
import { authorizedFetch } from "../../../../src/platform/connections/remote.ts";
import { connectionRecord } from "../../../helpers/connections.ts";
import { serveLocally } from "../../../helpers/local-http.ts";

// An OAuth connection's request to its server answered 401 is sent again with a token refreshed
// past the refused one, unless the request was cut meanwhile: it then asks for no token, so no
// refresh starts for a request nobody waits for.

let server: { base: string; close(): Promise<void> };

beforeAll(async () => {
  server = await serveLocally(() => ({ status: 401 }));
});

afterAll(async () => {
  await server?.close();
});

/** Bearers that hand out numbered tokens and record what each ask refused. */
function recordingBearers(asked: (string | undefined)[]): OAuthBearers {
  return {
    bearer: async (_record, rejected) => {
      asked.push(rejected);
      return `access-${asked.length}`;
    },
    refused: () => false,
    stepUp: async () => ({ go_url: "https://atrium.example/go" }),
    secrets: () => [],
  };
}

it("a request cut as its 401 arrives asks for no refreshed token and fails with its own reason", async () => {
  const asked: (string | undefined)[] = [];
  const cut = new AbortController();
  // The client closes (a disable, remove or stop ending a photograph) as the 401 arrives.
  const cutOnAnswer: typeof fetch = async (url, init) => {
    const response = await fetch(url, init);
    cut.abort(new Error("the photograph's client was closed"));
    return response;
  };
  const send = authorizedFetch(
    connectionRecord("ws_0123456789abcdef", { url: `${server.base}/mcp` }),
    cutOnAnswer,
    recordingBearers(asked),
  );
  await expect(send(`${server.base}/mcp`, { method: "POST", signal: cut.signal })).rejects.toThrow(
    "the photograph's client was closed",
  );
  expect(asked).toEqual([undefined]);
});

it("a request answered 401 and not cut is sent again with a token refreshed past the refused one", async () => {
  const asked: (string | undefined)[] = [];
  const send = authorizedFetch(
    connectionRecord("ws_0123456789abcdef", { url: `${server.base}/mcp` }),
    fetch,
    recordingBearers(asked),
  );
  const response = await send(`${server.base}/mcp`, { method: "POST", signal: new AbortController().signal });
  expect(response.status).toBe(401);
  expect(asked).toEqual([undefined, "access-1"]);
});
