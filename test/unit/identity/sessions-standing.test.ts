import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../../src/identity/principal.ts";
import { Sessions } from "../../../src/identity/sessions.ts";
import { UserDirectory } from "../../../src/identity/users.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

// A session begun before its person's deactivation stays over after the reactivation (ADR 0018);
// which came first is told by the standing id the profile's last reactivation drew, not by two
// wall-clock stamps (ADR 0169), nor by a count a restored profile.json takes back (amended later
// still). Compared by stamps, a clock stepped back after a reactivation stamped every new
// sign-in "before" it: the person was locked out until the clock passed it (review 52); and a
// reactivation stamped before an old session (the clock stepped back before it) let that session
// back in.

const ADA: Principal = {
  id: "usr_0123456789abcdef01234567",
  displayName: "Ada",
  email: "ada@example.test",
  orgRole: "member",
};
const HOUR_MS = 60 * 60 * 1000;

let root: string;
let layout: StorageLayout;
let clockMs: number;
let users: UserDirectory;
let sessions: Sessions;

/** The directory and the sessions as a process starts them: read from the data root. */
async function boot(): Promise<void> {
  users = new UserDirectory(layout, () => clockMs);
  await users.load();
  sessions = new Sessions(layout, {
    secret: "a-session-secret-of-at-least-32-bytes!!",
    maxAgeSeconds: 24 * 3600,
    secureCookies: false,
    now: () => clockMs,
    standingOf: (principalId) => users.standingOf(principalId),
  });
}

async function lookup(setCookie: string): Promise<string> {
  const pair = setCookie.split(";")[0] as string;
  const request = new Request("http://127.0.0.1/", { headers: { cookie: pair } });
  return (await sessions.lookup(request)).kind;
}

/**
 * Rewrites every JSON file in `dir` without `standingId`, as a release before standing ids wrote
 * it, with `extra` added (a development build's numeric generation).
 */
async function withoutStandingId(dir: string, extra: Record<string, unknown> = {}): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".json")) continue;
    const path = join(dir, name);
    const { standingId: _dropped, ...rest } = JSON.parse(await readFile(path, "utf8"));
    await writeFile(path, JSON.stringify({ ...rest, ...extra }));
  }
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-sessions-standing-"));
  layout = new StorageLayout(root);
  clockMs = Date.parse("2026-12-07T12:00:00Z");
  await boot();
  await users.record(ADA);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("a session and its person's deactivation", () => {
  it("a session started after a reactivation is accepted even when the clock was stepped back in between", async () => {
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false); // reactivated at 12:00
    clockMs -= HOUR_MS; // NTP steps the clock back an hour
    clockMs += 60_000; // a minute later, Ada signs in
    const cookie = await sessions.start(ADA);
    expect(await lookup(cookie)).toBe("signed-in");
    await boot();
    expect(await lookup(cookie)).toBe("signed-in");
  });

  it("a session begun before a deactivation stays over when the reactivation is stamped before it, across a restart", async () => {
    const stolen = await sessions.start(ADA); // 12:00, on the laptop that is stolen
    clockMs -= HOUR_MS;
    await users.setDeactivated(ADA.id, true); // 11:00 by the clock
    // Still hers while she is deactivated: every request is refused with the 403 that says why.
    expect(await lookup(stolen)).toBe("signed-in");
    await users.setDeactivated(ADA.id, false);
    await boot();
    expect(await lookup(stolen)).toBe("invalid");
    // Over for good: the record went with the refusal.
    expect(await readdir(layout.collectionDir("sessions"))).toEqual([]);
  });

  it.each([
    ["kept no standing id", {}],
    ["hold a development build's numeric standingGeneration", { standingGeneration: 1 }],
  ])(
    "session records that %s are judged by their stamp while the person holds no id",
    async (_label, extra) => {
      // A profile reactivated at 12:00 by a release that kept no standing id.
      await users.setDeactivated(ADA.id, true);
      await users.setDeactivated(ADA.id, false);
      await withoutStandingId(layout.userDir(ADA.id), extra);
      const before = await sessions.start(ADA); // 12:00: at the reactivation, so begun before it
      clockMs += 1;
      const after = await sessions.start(ADA);
      await withoutStandingId(layout.collectionDir("sessions"), extra);
      await boot();
      expect(users.standingOf(ADA.id)).toEqual({ reactivatedAt: clockMs - 1 });
      expect(await lookup(before)).toBe("invalid");
      expect(await lookup(after)).toBe("signed-in");
      // A reactivation that drew an id since is later than every record that kept none.
      clockMs -= HOUR_MS;
      await users.setDeactivated(ADA.id, true);
      await users.setDeactivated(ADA.id, false);
      expect(await lookup(after)).toBe("invalid");
    },
  );

  it("a session that kept a standing id is refused once profile.json is restored from before ids", async () => {
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false);
    const session = await sessions.start(ADA);
    await withoutStandingId(layout.userDir(ADA.id));
    await boot();
    expect(await lookup(session)).toBe("invalid");
  });

  it("a session begun before a deactivation stays over after the reactivation when profile.json was restored from a backup", async () => {
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false);
    const profile = join(layout.userDir(ADA.id), "profile.json");
    const backup = join(root, "profile.backup.json");
    await copyFile(profile, backup); // the nightly backup
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false);
    const stolen = await sessions.start(ADA); // on the laptop that is stolen
    await copyFile(backup, profile); // the operator restores the profile
    await boot();
    await users.setDeactivated(ADA.id, true); // the theft is reported
    await users.setDeactivated(ADA.id, false);
    expect(await lookup(stolen)).toBe("invalid");
    expect(await lookup(await sessions.start(ADA))).toBe("signed-in");
  });
});
