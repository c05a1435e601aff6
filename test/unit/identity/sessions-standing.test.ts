import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../../src/identity/principal.ts";
import { Sessions } from "../../../src/identity/sessions.ts";
import { UserDirectory } from "../../../src/identity/users.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

// A session begun before its person's deactivation stays over after the reactivation (ADR 0018);
// which came first is told by the profile's standing generation, not by two wall-clock stamps
// (ADR 0169). Compared by stamps, a clock stepped back after a reactivation stamped every new
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

/** Rewrites every JSON file in `dir` without `field`, as a release before ADR 0169 wrote it. */
async function withoutField(dir: string, field: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".json")) continue;
    const path = join(dir, name);
    const { [field]: _dropped, ...rest } = JSON.parse(await readFile(path, "utf8"));
    await writeFile(path, JSON.stringify(rest));
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

  it("a session record from before generations were kept is judged by its stamp while no reactivation has counted since", async () => {
    // A profile reactivated at 12:00 by a release that kept no generation.
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false);
    await withoutField(layout.userDir(ADA.id), "standingGeneration");
    const before = await sessions.start(ADA); // 12:00: at the reactivation, so begun before it
    clockMs += 1;
    const after = await sessions.start(ADA);
    await withoutField(layout.collectionDir("sessions"), "standingGeneration");
    await boot();
    expect(users.standingOf(ADA.id)).toEqual({ generation: 0, reactivatedAt: clockMs - 1 });
    expect(await lookup(before)).toBe("invalid");
    expect(await lookup(after)).toBe("signed-in");
    // A reactivation counted since is later than every record that kept no generation.
    clockMs -= HOUR_MS;
    await users.setDeactivated(ADA.id, true);
    await users.setDeactivated(ADA.id, false);
    expect(await lookup(after)).toBe("invalid");
  });
});
