import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../../src/identity/principal.ts";
import {
  SECURE_SESSION_COOKIE,
  SESSION_COOKIE,
  SESSION_SWEEP_INTERVAL_MS,
  Sessions,
  secureCookiesFor,
} from "../../../src/identity/sessions.ts";
import { newStandingId, type PersonStanding } from "../../../src/identity/standing.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

const ADA: Principal = {
  id: "usr_0123456789abcdef01234567",
  displayName: "Ada",
  email: "ada@example.test",
  orgRole: "member",
};
const SECRET = "a-session-secret-of-at-least-32-bytes!!";
const MAX_AGE_SECONDS = 3600;

let root: string;
let layout: StorageLayout;
let clockMs: number;

function sessions(
  options: { secret?: string; secureCookies?: boolean; standingOf?: () => PersonStanding } = {},
): Sessions {
  return new Sessions(layout, {
    secret: options.secret ?? SECRET,
    maxAgeSeconds: MAX_AGE_SECONDS,
    secureCookies: options.secureCookies ?? false,
    now: () => clockMs,
    ...(options.standingOf && { standingOf: options.standingOf }),
  });
}

/** The request a browser sends back with the cookie a Set-Cookie value set. */
function requestWith(setCookie: string, path = "/"): Request {
  const pair = setCookie.split(";")[0] as string;
  return new Request(`http://127.0.0.1${path}`, { headers: { cookie: `other=1; ${pair}` } });
}

function cookieValue(setCookie: string): string {
  return (setCookie.split(";")[0] as string).split("=")[1] as string;
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-sessions-"));
  layout = new StorageLayout(root);
  clockMs = Date.parse("2026-01-01T00:00:00Z");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("Sessions", () => {
  it("a started session resolves to the principal the provider described", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    const found = await store.lookup(requestWith(cookie));
    expect(found).toMatchObject({ kind: "signed-in", principal: ADA });
  });

  it("a request without the cookie has no session, and one with a foreign cookie name neither", async () => {
    const store = sessions();
    expect(await store.lookup(new Request("http://127.0.0.1/"))).toEqual({ kind: "none" });
    const cookie = await store.start(ADA);
    const secure = sessions({ secureCookies: true });
    expect(await secure.lookup(requestWith(cookie))).toEqual({ kind: "none" });
  });

  it("stores the record under the SHA-256 of the id, and the id appears nowhere on disk", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    const found = await store.lookup(requestWith(cookie));
    if (found.kind !== "signed-in") throw new Error("not signed in");
    const files = await readdir(layout.collectionDir("sessions"));
    const digest = createHash("sha256").update(found.sessionId).digest("hex");
    expect(files).toEqual([`${digest}.json`]);
    const stored = await readFile(join(layout.collectionDir("sessions"), files[0] as string), "utf8");
    expect(stored).not.toContain(found.sessionId);
    expect(JSON.parse(stored)).toMatchObject({ principal: ADA });
  });

  it("a tampered, truncated or foreign-secret cookie is invalid", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    const value = cookieValue(cookie);
    const [id, signature] = value.split(".") as [string, string];
    const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1);
    const other = await sessions({ secret: "another-secret-that-is-long-enough-too!!" }).start(ADA);
    for (const [label, forged] of [
      ["id changed", `${flip(id)}.${signature}`],
      ["signature changed", `${id}.${flip(signature)}`],
      ["no signature", id],
      ["empty", ""],
      ["signed with another secret", cookieValue(other)],
      ["not base64url", `${id}.${signature.slice(0, -1)}*`],
    ] as const) {
      const request = new Request("http://127.0.0.1/", {
        headers: { cookie: `${SESSION_COOKIE}=${forged}` },
      });
      expect(await store.lookup(request), label).toEqual({ kind: "invalid" });
    }
  });

  it("a session begun under another standing id is over, one begun under its person's current one is not", async () => {
    let standing: PersonStanding = { standingId: newStandingId() };
    const store = sessions({ standingOf: () => standing });
    const old = await store.start(ADA);
    standing = { standingId: newStandingId(), reactivatedAt: clockMs };
    expect(await store.lookup(requestWith(old))).toEqual({ kind: "invalid" });
    const fresh = await store.start(ADA);
    expect(await store.lookup(requestWith(fresh))).toMatchObject({ kind: "signed-in", principal: ADA });
    // Over for good: the record is gone, not only refused.
    standing = {};
    expect(await store.lookup(requestWith(old))).toEqual({ kind: "invalid" });
  });

  it("a well-signed cookie whose record is gone is invalid", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    await rm(layout.collectionDir("sessions"), { recursive: true });
    expect(await store.lookup(requestWith(cookie))).toEqual({ kind: "invalid" });
  });

  it("a session expires maxAgeSeconds after sign-in however busy it was, and its record is deleted", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    clockMs += (MAX_AGE_SECONDS - 1) * 1000;
    expect((await store.lookup(requestWith(cookie))).kind).toBe("signed-in");
    clockMs += 1000;
    expect(await store.lookup(requestWith(cookie))).toEqual({ kind: "invalid" });
    expect(await readdir(layout.collectionDir("sessions"))).toEqual([]);
  });

  it("ending a session deletes its record and clears the cookie; the old cookie is then invalid", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    const cleared = await store.end(requestWith(cookie));
    expect(cleared).toBe(`${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`);
    expect(await readdir(layout.collectionDir("sessions"))).toEqual([]);
    expect(await store.lookup(requestWith(cookie))).toEqual({ kind: "invalid" });
  });

  it("ending only deletes a session whose cookie is signed: a forged id deletes nothing", async () => {
    const store = sessions();
    const cookie = await store.start(ADA);
    const [id] = cookieValue(cookie).split(".") as [string];
    const forged = new Request("http://127.0.0.1/", {
      headers: { cookie: `${SESSION_COOKIE}=${id}.${"A".repeat(43)}` },
    });
    await store.end(forged);
    expect((await store.lookup(requestWith(cookie))).kind).toBe("signed-in");
  });

  it("over http on loopback the cookie is HttpOnly, SameSite=Lax, Path=/, with Max-Age and no Secure", async () => {
    const cookie = await sessions().start(ADA);
    expect(cookie).toMatch(
      new RegExp(
        `^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}\\.[A-Za-z0-9_-]{43}; Max-Age=${MAX_AGE_SECONDS}; Path=/; HttpOnly; SameSite=Lax$`,
      ),
    );
  });

  it("with secure cookies the cookie is Secure and named __Host-", async () => {
    const store = sessions({ secureCookies: true });
    const cookie = await store.start(ADA);
    expect(cookie).toMatch(
      new RegExp(
        `^${SECURE_SESSION_COOKIE}=[A-Za-z0-9_.-]+; Max-Age=${MAX_AGE_SECONDS}; Path=/; HttpOnly; Secure; SameSite=Lax$`,
      ),
    );
    expect((await store.lookup(requestWith(cookie))).kind).toBe("signed-in");
    expect(await store.end(requestWith(cookie))).toBe(
      `${SECURE_SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax`,
    );
  });

  it("a clock stepped back behind the last sweep does not put the next one off for the step (ADR 0168)", async () => {
    const store = sessions();
    clockMs -= 24 * 60 * 60 * 1000; // NTP steps the wall clock back a day
    const stale = await store.start(ADA);
    clockMs += SESSION_SWEEP_INTERVAL_MS + MAX_AGE_SECONDS * 1000;
    // Before, no sweep ran until the clock had caught up with the last one, a day from now.
    const fresh = await store.start(ADA);
    expect(await readdir(layout.collectionDir("sessions"))).toHaveLength(1);
    expect((await store.lookup(requestWith(fresh))).kind).toBe("signed-in");
    expect((await store.lookup(requestWith(stale))).kind).toBe("invalid");
  });

  it("a sign-in after the sweep interval removes expired records no browser came back with", async () => {
    const store = sessions();
    const stale = await store.start(ADA);
    clockMs += SESSION_SWEEP_INTERVAL_MS + MAX_AGE_SECONDS * 1000;
    const fresh = await store.start(ADA);
    expect(await readdir(layout.collectionDir("sessions"))).toHaveLength(1);
    expect((await store.lookup(requestWith(fresh))).kind).toBe("signed-in");
    expect((await store.lookup(requestWith(stale))).kind).toBe("invalid");
  });
});

describe("secureCookiesFor", () => {
  it("is false only for http on a loopback host", () => {
    expect(secureCookiesFor("http://127.0.0.1:8787")).toBe(false);
    expect(secureCookiesFor("http://localhost:8787")).toBe(false);
    expect(secureCookiesFor("http://[::1]:8787")).toBe(false);
    expect(secureCookiesFor("https://127.0.0.1:8787")).toBe(true);
    expect(secureCookiesFor("https://atrium.example")).toBe(true);
    expect(secureCookiesFor("http://atrium.example")).toBe(true);
    expect(secureCookiesFor("http://127.0.0.1.evil.example")).toBe(true);
  });
});
