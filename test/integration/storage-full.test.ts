import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TestAtrium } from "../helpers/atrium.ts";
import {
  approveCode,
  authorize,
  consentRequestId,
  decide,
  pkcePair,
  REDIRECT_URI,
  registerClient,
  sessionCookie,
  tokenRequest,
} from "../helpers/oauth.ts";
import { canMount, type SmallDisk } from "../helpers/small-disk.ts";
import { type SmallDiskAtrium, startSmallDiskAtrium } from "../helpers/small-disk-atrium.ts";

// docs/operations.md "A full disk": a write any store cannot make on a full data root stores
// nothing and is answered as a full disk (507 over REST, an isError result over MCP, 503
// temporarily_unavailable in OAuth's shape, a page at the consent form), with one warning in the
// log rather than an "unhandled error" and its stack (adr/0165). A real tmpfs, really full: the
// tests skip where mounting is not permitted.

const WARNING = "storage full: a write was refused and nothing stored";

describe.skipIf(!canMount)("a write on a full data root", () => {
  let scene: SmallDiskAtrium | undefined;
  let disk: SmallDisk;
  let instance: TestAtrium;
  let captured: SmallDiskAtrium["captured"];
  let ws: string;
  beforeEach(async () => {
    scene = await startSmallDiskAtrium({ logLevel: "warn" });
    ({ disk, instance, captured, ws } = scene);
  });
  afterEach(() => scene?.stop());

  /** Runs `work` with the disk full to its last byte, and frees it again after. */
  async function onFullDisk<T>(work: () => Promise<T>): Promise<T> {
    disk.fill();
    try {
      return await work();
    } finally {
      await disk.free();
    }
  }

  /** The operator was told of a full disk, as a warning, and of nothing unexpected. */
  function expectToldAsFull(): void {
    const told = captured.lines.filter((line) => line.msg === WARNING);
    expect(told.at(-1)).toMatchObject({ level: 40, reason: "ENOSPC" });
    expect(captured.lines.filter((line) => (line.level as number) >= 50)).toEqual([]);
  }

  const restCases: Array<[string, string, string, Record<string, unknown>]> = [
    ["creating a skill", "POST", "/skills", { name: "a-skill", description: "d", body: "hello" }],
    ["creating a task", "POST", "/tasks", { name: "t", action: { tool: "files__list", arguments: {} } }],
    ["renaming the workspace", "PATCH", "", { name: "Renamed" }],
    ["inviting someone", "POST", "/invitations", { email: "bob@example.test" }],
    ["acknowledging the inbox", "POST", "/notifications/ack", { all: true }],
  ];
  it.each(restCases)("%s is answered 507 insufficient_storage", async (_what, method, path, body) => {
    const response = await onFullDisk(() =>
      instance.rest("alice", method, `/v1/workspaces/${ws}${path}`, body),
    );
    const text = await response.text();
    expect(response.status, text).toBe(507);
    expect(JSON.parse(text)).toMatchObject({
      error: { code: "insufficient_storage", message: expect.stringMatching(/storage is full/) },
    });
    expectToldAsFull();
  });

  it("creating a workspace is answered 507 insufficient_storage", async () => {
    const response = await onFullDisk(() => instance.rest("alice", "POST", "/v1/workspaces", { name: "B" }));
    expect(response.status, await response.text()).toBe(507);
    expectToldAsFull();
  });

  it("a person's first sign-in is answered 507 insufficient_storage", async () => {
    const response = await onFullDisk(() => instance.rest("carol", "GET", "/v1/bootstrap"));
    expect(response.status, await response.text()).toBe(507);
    expectToldAsFull();
  });

  it("a platform tool over MCP says the storage is full and what to do, not that it failed unexpectedly", async () => {
    const client = await instance.mcpClient("alice", ws);
    const result = await onFullDisk(() =>
      client.callTool({
        name: "skills__create",
        arguments: { name: "b-skill", description: "d", body: "x" },
      }),
    );
    expect(result.isError).toBe(true);
    const text = JSON.stringify(result.content);
    expect(text).toMatch(/storage is full.*Try again once space has been freed/);
    expect(text).not.toContain("failed unexpectedly");
    expectToldAsFull();
    expect(captured.lines.find((line) => line.msg === WARNING)).toMatchObject({ tool: "skills__create" });
  });

  it("client registration is answered 503 temporarily_unavailable, with Retry-After", async () => {
    const response = await onFullDisk(() =>
      fetch(`${instance.url}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "c",
          redirect_uris: [REDIRECT_URI],
          token_endpoint_auth_method: "none",
        }),
      }),
    );
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("60");
    expect(await response.json()).toMatchObject({
      error: "temporarily_unavailable",
      error_description: expect.stringMatching(/storage is full/),
    });
    expectToldAsFull();
  });

  it("a code's exchange at the token endpoint is answered 503 temporarily_unavailable", async () => {
    const exchange = await approveCode(instance, await sessionCookie(instance, "alice"), ws);
    const response = await onFullDisk(() =>
      tokenRequest(instance, { ...exchange, resource: `${instance.url}/mcp/${ws}` }),
    );
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("60");
    expect(((await response.json()) as { error: string }).error).toBe("temporarily_unavailable");
    expectToldAsFull();
  });

  it("the consent form's answer is a page that says the storage is full, not JSON", async () => {
    const cookie = await sessionCookie(instance, "alice");
    const { client_id: clientId } = await registerClient(instance);
    const consent = await authorize(instance, cookie, {
      clientId,
      workspaceId: ws,
      challenge: pkcePair().challenge,
    });
    const requestId = consentRequestId(await consent.text());
    const response = await onFullDisk(() => decide(instance, cookie, requestId, "approve"));
    expect(response.status).toBe(507);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await response.text()).toMatch(/storage is full/);
    expectToldAsFull();
  });
});
