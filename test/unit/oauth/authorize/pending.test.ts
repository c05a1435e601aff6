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
    const pending = await store().create(REQUEST);
    const first = await store().decide(pending.id, "approve");
    const again = await store().decide(pending.id, "approve");
    expect(first.kind).toBe("decided");
    expect(again.kind).toBe("decided");
    if (first.kind !== "decided" || again.kind !== "decided") return;
    expect(store().codeFor(again.pending)).toBe(store().codeFor(first.pending));
    expect(await store().decide(pending.id, "deny")).toEqual({ kind: "conflict", earlier: "approve" });
  });

  it("the code is never stored, and differs per request and per secret", async () => {
    const a = await store().create(REQUEST);
    const b = await store().create(REQUEST);
    const code = store().codeFor(a);
    expect(code).not.toBe(store().codeFor(b));
    expect(code).not.toBe(new PendingAuthorizations(layout, `${SECRET}-other`).codeFor(a));
    const folder = layout.collectionDir("oauth/requests");
    for (const name of await readdir(folder)) {
      expect(await readFile(join(folder, name), "utf8")).not.toContain(code);
    }
  });

  it("an expired request cannot be decided, and the sweep removes it", async () => {
    const pending = await store().create(REQUEST);
    clock += PENDING_TTL_MS + 1;
    expect(await store().decide(pending.id, "approve")).toEqual({ kind: "expired" });
    await store().sweep();
    expect(await readdir(layout.collectionDir("oauth/requests"))).toEqual([]);
  });

  it("an id outside the grammar is no request (never a path)", async () => {
    expect(await store().get("../../etc/passwd")).toBeUndefined();
    expect(await store().decide("x", "deny")).toEqual({ kind: "expired" });
  });
});
