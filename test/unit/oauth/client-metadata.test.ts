import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientMetadataDocuments, MAX_DOCUMENT_BYTES } from "../../../src/oauth/client-metadata.ts";
import { testClock } from "./fixtures.ts";

let server: Server;
let base: string;
const hits = new Map<string, number>();

/** What each path of the document server answers; the document names itself by its own URL. */
function answer(path: string): {
  status?: number;
  type?: string;
  headers?: Record<string, string>;
  body: string;
} {
  const self = `${base}${path}`;
  const doc = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ client_id: self, client_name: "Doc", redirect_uris: ["http://127.0.0.1/cb"], ...extra });
  switch (path) {
    case "/good.json":
      return { body: doc(), headers: { "cache-control": "max-age=600" } };
    case "/no-store.json":
      return { body: doc(), headers: { "cache-control": "no-store" } };
    case "/redirect.json":
      return { status: 302, headers: { location: "/good.json" }, body: "" };
    case "/missing.json":
      return { status: 404, body: "{}" };
    case "/text.json":
      return { type: "text/html", body: "<html></html>" };
    case "/huge.json":
      return { body: doc({ padding: "x".repeat(MAX_DOCUMENT_BYTES) }) };
    case "/broken.json":
      return { body: "{not json" };
    case "/other-id.json":
      return { body: doc({ client_id: `${base}/good.json` }) };
    case "/secret.json":
      return { body: doc({ client_secret: "s" }) };
    case "/basic.json":
      return { body: doc({ token_endpoint_auth_method: "client_secret_basic" }) };
    case "/bad-redirect.json":
      return { body: doc({ redirect_uris: ["http://evil.example/cb"] }) };
    case "/bidi-name.json":
      return { body: doc({ client_name: "Atrium Docs\u202E" }) };
    case "/long-name.json":
      return { body: doc({ client_name: "x".repeat(1000) }) };
    default:
      return { status: 404, body: "{}" };
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === "/slow.json") return; // never answers
    const { status = 200, type = "application/json", headers = {}, body } = answer(path);
    res.writeHead(status, { "content-type": type, ...headers });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function refusal(documents: ClientMetadataDocuments, clientId: string, caller = CALLER): Promise<string> {
  return documents.resolve(clientId, caller).then(
    () => "accepted",
    (error: { errorCode: string; message: string }) => `${error.errorCode}: ${error.message}`,
  );
}

/** A connecting address, to which each fetch is charged. */
const CALLER = "127.0.0.1";

describe("client metadata documents", () => {
  it("fetches a document that names itself and describes a public client", async () => {
    const documents = new ClientMetadataDocuments({ allowPrivate: true });
    const client = await documents.resolve(`${base}/good.json`, CALLER);
    expect(client).toMatchObject({
      client_id: `${base}/good.json`,
      client_name: "Doc",
      token_endpoint_auth_method: "none",
      redirect_uris: ["http://127.0.0.1/cb"],
    });
  });

  it("keeps a document for its max-age, then fetches it again", async () => {
    const clock = testClock();
    const documents = new ClientMetadataDocuments({ allowPrivate: true, clock });
    const before = hits.get("/good.json") ?? 0;
    await documents.resolve(`${base}/good.json`, CALLER);
    await documents.resolve(`${base}/good.json`, CALLER);
    expect(hits.get("/good.json")).toBe(before + 1);
    clock.advance(600_000);
    await documents.resolve(`${base}/good.json`, CALLER);
    expect(hits.get("/good.json")).toBe(before + 2);
  });

  it("does not keep a no-store document", async () => {
    const documents = new ClientMetadataDocuments({ allowPrivate: true });
    await documents.resolve(`${base}/no-store.json`, CALLER);
    await documents.resolve(`${base}/no-store.json`, CALLER);
    expect(hits.get("/no-store.json")).toBe(2);
  });

  it.each([
    ["/redirect.json", /HTTP 302, a redirect, which is not followed/],
    ["/missing.json", /HTTP 404/],
    ["/text.json", /text\/html/],
    ["/huge.json", /larger than 64 KiB/],
    ["/broken.json", /not valid JSON/],
    ["/other-id.json", /different client_id/],
    ["/secret.json", /client secret/],
    ["/basic.json", /client_secret_basic/],
    ["/bad-redirect.json", /http:\/\/evil.example\/cb may use http only on a loopback host/],
    ["/bidi-name.json", /client_name must be one line of visible text/],
    ["/long-name.json", /client_name must be 1 to 100 characters/],
  ])("refuses %s, saying why", async (path, why) => {
    const message = await refusal(new ClientMetadataDocuments({ allowPrivate: true }), `${base}${path}`);
    expect(message).toMatch(/^invalid_client: The client metadata document at /);
    expect(message).toMatch(why);
  });

  it("charges each fetch to the connecting address, up to the hourly limit; a cached document is free", async () => {
    const clock = testClock();
    const documents = new ClientMetadataDocuments({ allowPrivate: true, fetchesPerHour: 3, clock });
    const hitsOf = (path: string) => hits.get(path) ?? 0;
    await documents.resolve(`${base}/good.json`, "192.0.2.1");
    for (const n of [1, 2]) {
      expect(await refusal(documents, `${base}/limit-${n}.json`, "192.0.2.1")).toMatch(/HTTP 404/);
    }
    const good = hitsOf("/good.json");
    expect(await documents.resolve(`${base}/good.json`, "192.0.2.1")).toMatchObject({ client_name: "Doc" });
    expect(hitsOf("/good.json")).toBe(good);
    expect(await refusal(documents, `${base}/limit-3.json`, "192.0.2.1")).toMatch(
      /^too_many_requests: Too many client metadata documents .* try again in 3600 s/,
    );
    expect(hitsOf("/limit-3.json")).toBe(0);
    // Another address has its own allowance, and the window ends.
    expect(await refusal(documents, `${base}/limit-3.json`, "192.0.2.2")).toMatch(/HTTP 404/);
    clock.advance(60 * 60 * 1000);
    expect(await refusal(documents, `${base}/limit-4.json`, "192.0.2.1")).toMatch(/HTTP 404/);
  });

  it("gives up on a server that does not answer in time", async () => {
    const documents = new ClientMetadataDocuments({ allowPrivate: true, timeoutMs: 200 });
    expect(await refusal(documents, `${base}/slow.json`)).toMatch(/did not answer within 0.2 s/);
  });

  it("refuses loopback and private addresses unless the instance allows them", async () => {
    const strict = new ClientMetadataDocuments({ allowPrivate: false });
    const port = new URL(base).port;
    // Refused alike, never saying what a name resolves to or what kind of address it is.
    for (const clientId of [
      `https://127.0.0.1:${port}/good.json`,
      "https://10.0.0.5/client.json",
      "https://[::ffff:a9fe:a9fe]/client.json",
      `https://localhost:${port}/good.json`,
    ]) {
      const message = await refusal(strict, clientId);
      expect(message, clientId).toMatch(
        /is not at a public internet address, which this instance requires\.$/,
      );
      expect(message, clientId).not.toMatch(/resolves|loopback|private|link-local|::1|127\.0\.0\.1 *\)/);
    }
    // http is for local development only.
    expect(await refusal(strict, `${base}/good.json`)).toMatch(/must be an https URL/);
    expect(
      await refusal(new ClientMetadataDocuments({ allowPrivate: true }), "http://example.com/c.json"),
    ).toMatch(/must be an https URL/);
  });

  it.each([
    ["https://example.com", /must have a path/],
    ["https://example.com/", /must have a path/],
    ["https://user:pw@example.com/c.json", /user name or password/],
    ["https://example.com/c.json#x", /fragment/],
    ["https://example.com/a/../c.json", /canonical/],
    ["https://example.com:443/c.json", /canonical/],
    ["https://exa mple.com/c.json", /not a valid URL/],
  ])("refuses the client_id %s before fetching", async (clientId, why) => {
    expect(await refusal(new ClientMetadataDocuments({ allowPrivate: false }), clientId)).toMatch(why);
  });
});
