import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../src/web/json-bounds.ts";
import { bootstrapWorkspace, MCP_POST_HEADERS, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";

// Under `dev` a request with no credential is the developer, so a page on another local port
// must not be able to change anything with a CORS-simple request (ADR 0026).
const OTHER_PORT = "http://localhost:5555";

let instance: TestAtrium;
let ws: string;

beforeAll(async () => {
  instance = await startTestAtrium({ dev: true });
  ws = await bootstrapWorkspace(instance, null);
});

afterAll(async () => {
  await instance?.stop();
});

async function workspaceCount(): Promise<number> {
  return (await readdir(instance.root)).filter((name) => name.startsWith("ws_")).length;
}

async function fileCount(): Promise<number> {
  const response = await instance.rest(null, "GET", `/v1/workspaces/${ws}/files`);
  return ((await response.json()) as { files: unknown[] }).files.length;
}

function post(path: string, body: string, headers: Record<string, string>) {
  return instance.raw(null, "POST", path, { headers, body });
}

describe("JSON bodies must say they are JSON", () => {
  it.each([
    ["text/plain", "text/plain"],
    ["a form", "application/x-www-form-urlencoded"],
    ["no Content-Type", undefined],
    ["a JSON-looking type that is not application/json", "application/jsonx"],
  ])("a REST body sent as %s is 415 and changes nothing", async (_label, contentType) => {
    const before = await workspaceCount();
    const response = await post(
      "/v1/workspaces",
      JSON.stringify({ name: "sneaky" }),
      contentType === undefined ? {} : { "content-type": contentType },
    );
    expect(response.status).toBe(415);
    expect(JSON.parse(response.text)).toEqual({
      error: { code: "unsupported_media_type", message: expect.stringContaining("application/json") },
    });
    expect(await workspaceCount()).toBe(before);
  });

  it("application/json with a charset parameter is accepted", async () => {
    const response = await post("/v1/workspaces", JSON.stringify({ name: "typed" }), {
      "content-type": "Application/JSON; charset=utf-8",
    });
    expect(response.status).toBe(201);
  });

  it("a body nested deeper than the bound is refused before it is parsed", async () => {
    const deep = `{"name": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const response = await post("/v1/workspaces", deep, { "content-type": "application/json" });
    expect(response.status).toBe(400);
    const { message } = (JSON.parse(response.text) as { error: { message: string } }).error;
    expect(message).toBe(`The body nests deeper than ${MAX_JSON_DEPTH} arrays or objects.`);
  });

  it("a body holding more arrays and objects than the bound is refused before it is parsed", async () => {
    const wide = `{"name": [${Array.from({ length: MAX_JSON_CONTAINERS }, () => "{}").join(",")}]}`;
    const response = await post("/v1/workspaces", wide, { "content-type": "application/json" });
    expect(response.status).toBe(400);
    const { message } = (JSON.parse(response.text) as { error: { message: string } }).error;
    expect(message).toBe(`The body holds more than ${MAX_JSON_CONTAINERS} arrays and objects.`);
  });

  it("a body that does not parse says the JSON did not parse, and where", async () => {
    const response = await post("/v1/workspaces", '{"name": "x",}', { "content-type": "application/json" });
    expect(response.status).toBe(400);
    const { message } = (JSON.parse(response.text) as { error: { message: string } }).error;
    expect(message).toMatch(/^The body is not valid JSON: /);
    expect(message).toMatch(/position \d+/);
    expect(message).not.toMatch(/Content-Type/);
  });
});

describe("under dev, writes from another origin are refused", () => {
  it("a JSON POST from another local port is 403 and creates nothing", async () => {
    const before = await workspaceCount();
    const response = await post("/v1/workspaces", JSON.stringify({ name: "cross" }), {
      "content-type": "application/json",
      origin: OTHER_PORT,
    });
    expect(response.status).toBe(403);
    expect(JSON.parse(response.text)).toMatchObject({ error: { code: "forbidden" } });
    expect(JSON.parse(response.text).error.message).toContain(OTHER_PORT);
    expect(await workspaceCount()).toBe(before);
  });

  it("a CORS-simple tool call from another local port is refused and calls nothing", async () => {
    const before = await fileCount();
    const response = await post(
      `/v1/workspaces/${ws}/tools/call`,
      JSON.stringify({ name: "files__write", arguments: { name: "x.txt", text: "pwned" } }),
      { "content-type": "text/plain", origin: OTHER_PORT },
    );
    expect(response.status).toBe(403);
    expect(await fileCount()).toBe(before);
  });

  it("a CORS-simple upload from another local port is refused and stores nothing", async () => {
    const before = await fileCount();
    const response = await post(`/v1/workspaces/${ws}/files?name=x.txt`, "pwned", {
      "content-type": "text/plain",
      origin: OTHER_PORT,
    });
    expect(response.status).toBe(403);
    expect(await fileCount()).toBe(before);
  });

  it("a DELETE from another local port is refused", async () => {
    const response = await instance.raw(null, "DELETE", `/v1/workspaces/${ws}`, {
      headers: { origin: OTHER_PORT },
    });
    expect(response.status).toBe(403);
    expect((await instance.rest(null, "GET", `/v1/workspaces/${ws}`)).status).toBe(200);
  });

  it("the same write from Atrium's own origin, or with no Origin (curl, an SDK), is allowed", async () => {
    const own = await post("/v1/workspaces", JSON.stringify({ name: "own" }), {
      "content-type": "application/json",
      origin: new URL(instance.url).origin,
    });
    expect(own.status).toBe(201);
    const none = await post("/v1/workspaces", JSON.stringify({ name: "none" }), {
      "content-type": "application/json",
    });
    expect(none.status).toBe(201);
  });

  it("a read from another local port is still answered", async () => {
    const response = await instance.raw(null, "GET", "/v1/workspaces", { headers: { origin: OTHER_PORT } });
    expect(response.status).toBe(200);
  });

  it("the MCP endpoint refuses a CORS-simple text/plain body with 415 and calls nothing", async () => {
    const before = await fileCount();
    const response = await post(
      `/mcp/${ws}`,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "files__write", arguments: { name: "x.txt", text: "pwned" } },
      }),
      { "content-type": "text/plain", accept: MCP_POST_HEADERS.accept, origin: OTHER_PORT },
    );
    expect(response.status).toBe(415);
    expect(await fileCount()).toBe(before);
  });

  it("the OAuth registration endpoint stays CORS for any origin", async () => {
    const response = await post(
      "/oauth/register",
      JSON.stringify({ redirect_uris: ["http://127.0.0.1:9999/cb"], token_endpoint_auth_method: "none" }),
      { "content-type": "application/json", origin: "https://client.example" },
    );
    expect(response.status).toBe(201);
    expect(response.headers["access-control-allow-origin"]).toBe("*");
  });
});

describe("sign-out is a cookie-authenticated change", () => {
  async function signIn(): Promise<string> {
    const login = await instance.raw(null, "GET", "/auth/login");
    const cookie = ([] as string[])
      .concat(login.headers["set-cookie"] ?? [])
      .find((c) => c.startsWith("atrium_session="));
    if (!cookie) throw new Error("no session cookie from /auth/login");
    return cookie.split(";")[0] ?? "";
  }

  async function sessionWorks(cookie: string): Promise<boolean> {
    const response = await instance.raw(null, "GET", "/v1/bootstrap", { headers: { cookie } });
    return response.status === 200;
  }

  it("POST /auth/logout from another local port is 403 and the session lives on", async () => {
    const cookie = await signIn();
    const response = await instance.raw(null, "POST", "/auth/logout", {
      headers: { cookie, origin: OTHER_PORT },
    });
    expect(response.status).toBe(403);
    expect(await sessionWorks(cookie)).toBe(true);
  });

  it("POST /auth/logout from Atrium's own page ends the session", async () => {
    const cookie = await signIn();
    const response = await instance.raw(null, "POST", "/auth/logout", {
      headers: { cookie, origin: new URL(instance.url).origin },
    });
    expect(response.status).toBe(200);
    expect(await sessionWorks(cookie)).toBe(false);
  });
});
