import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PENDING_TTL_MS, PendingAuthorizations } from "../../../../src/oauth/authorize/pending.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";

const SECRET = "a-test-secret-that-is-long-enough-to-use";
const REQUEST = {
  clientId: "atc_x",
  redirectUri: "http://127.0.0.1:1/cb",
  codeChallenge: "c".repeat(43),
  scopes: ["mcp:read"],
  resource: "http://127.0.0.1:2/mcp/ws_0123456789abcdef",
  workspaceId: "ws_0123456789abcdef",
  state: "st",
  principalId: "usr_000000000000000000000000",
};

let dir: string;
let layout: StorageLayout;
let clock: number;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-pending-"));
  layout = new StorageLayout(dir);
  clock = 1_000_000;
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const store = () => new PendingAuthorizations(layout, SECRET, () => clock);

describe("PendingAuthorizations", () => {
  it("a repeated identical decision is idempotent and gives the same code; a contrary one is refused", async () => {
    const { pending } = store().create(REQUEST);
    const first = await store().decide(pending, "approve");
    const again = await store().decide(pending, "approve");
    expect(first.kind).toBe("decided");
    expect(again.kind).toBe("decided");
    if (first.kind !== "decided" || again.kind !== "decided") return;
    expect(store().codeFor(again.pending)).toBe(store().codeFor(first.pending));
    expect(await store().decide(pending, "deny")).toEqual({ kind: "conflict", earlier: "approve" });
  });

  it("the code is never stored, and differs per request and per secret", async () => {
    const { pending: a } = store().create(REQUEST);
    const { pending: b } = store().create(REQUEST);
    await store().decide(a, "approve");
    const code = store().codeFor(a);
    expect(code).not.toBe(store().codeFor(b));
    expect(code).not.toBe(new PendingAuthorizations(layout, `${SECRET}-other`).codeFor(a));
    const folder = layout.collectionDir("oauth/requests");
    for (const name of await readdir(folder)) {
      expect(await readFile(join(folder, name), "utf8")).not.toContain(code);
    }
  });

  it("an expired request cannot be opened or decided, and the sweep removes its decision", async () => {
    const { pending, sealed } = store().create(REQUEST);
    await store().decide(pending, "deny");
    clock += PENDING_TTL_MS + 1;
    expect(store().open(sealed)).toBeUndefined();
    expect(await store().decide(pending, "approve")).toEqual({ kind: "expired" });
    await store().sweep();
    expect(await readdir(layout.collectionDir("oauth/requests"))).toEqual([]);
  });

  it("creating a request writes nothing: it lives sealed in the consent page", async () => {
    for (let i = 0; i < 100; i++) store().create(REQUEST);
    expect(await store().sweep()).toBeUndefined();
    await expect(readdir(layout.collectionDir("oauth/requests"))).rejects.toMatchObject({ code: "ENOENT" });
    const { pending, sealed } = store().create(REQUEST);
    expect(store().open(sealed)).toEqual(pending);
  });

  it("a sealed request that was altered, forged, sealed with another secret or malformed is refused", async () => {
    const { sealed } = store().create(REQUEST);
    const [body = "", mac = ""] = sealed.split(".");
    const claims = JSON.parse(Buffer.from(body, "base64url").toString()) as Record<string, unknown>;
    const altered = Buffer.from(JSON.stringify({ ...claims, principalId: "usr_111111111111111111111111" }));
    for (const [label, value] of [
      ["another principal", `${altered.toString("base64url")}.${mac}`],
      [
        "another secret",
        new PendingAuthorizations(layout, `${SECRET}-other`, () => clock).create(REQUEST).sealed,
      ],
      ["no mac", body],
      ["extra part", `${sealed}.x`],
      ["empty", ""],
      ["a path", "../../etc/passwd"],
    ] as const) {
      expect(store().open(value), label).toBeUndefined();
    }
  });
});
