import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { acquireInstanceLock, InstanceLocked, type LockHolder } from "../../../src/instance/lock.ts";
import { type PidSpace, readPidSpace } from "../../../src/instance/lock-pid-space.ts";
import { createLogger } from "../../../src/log.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

// A stamp ahead of this process's clock has no age (ADR 0168): the clock was stepped back since it
// was written (an NTP step, a VM snapshot restored, a saved time restored at boot on a host with no
// real-time clock). The lock's heartbeat and a takeover's marker are judged by watching them.

const HOUR_MS = 60 * 60 * 1000;
let dir: string;
let layout: StorageLayout;
let logLines: string[];
let here: PidSpace;
const options = () => ({
  publicUrl: "http://127.0.0.1:8787",
  log: createLogger(
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  ),
});
const logged = () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
const readHolder = async () => JSON.parse(await readFile(layout.instanceLockFile(), "utf8")) as LockHolder;

beforeAll(async () => {
  here = await readPidSpace();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-lock-step-"));
  layout = new StorageLayout(join(dir, "root"));
  logLines = [];
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a lock for `holder` whose heartbeat was stamped at `stampMs`. */
async function writeLock(holder: Partial<LockHolder>, stampMs: number): Promise<void> {
  await mkdir(layout.instanceDir(), { recursive: true });
  const path = layout.instanceLockFile();
  await writeFile(
    path,
    JSON.stringify({ startedAt: "2026-12-07T10:00:00.000Z", publicUrl: "http://x", ...holder }),
  );
  await utimes(path, new Date(stampMs), new Date(stampMs));
}

describe("the instance lock after a clock step back", () => {
  it("a heartbeat stamped ahead of this clock by a dead holder is taken over once the watch sees it stand still", async () => {
    // The previous boot of this host: its PID cannot be checked (ADR 0133), only its heartbeat.
    const previousBoot = { ...here, bootId: "00000000-0000-4000-8000-000000000000" };
    await writeLock(
      { pid: 4242, host: hostname(), ...previousBoot, token: "previous-boot" },
      Date.now() + HOUR_MS,
    );
    const lock = await acquireInstanceLock(layout, { ...options(), heartbeatMs: 20, staleMs: 200 });
    expect((await readHolder()).token).toBe(lock.holder.token);
    const takeover = logged().find((entry) => entry.msg === "taking over a stale instance lock");
    // Watched for the whole stale bound, not two beats: a stamp ahead has no age.
    expect(takeover).toMatchObject({
      reason: "its heartbeat is stamped 3600 s ahead of this clock",
      watchedMs: 200,
    });
    await lock.release();
  });

  it("a holder stamped a second ahead that misses two beats but refreshes within the stale bound is not taken over", async () => {
    // Another host's holder, so only its heartbeat tells; the clock here was stepped back a second.
    await writeLock({ pid: 4242, host: "elsewhere.example", token: "theirs" }, Date.now() + 1_000);
    // Its next beat comes late (a GC pause, a slow disk): after two of this watch's beats, well
    // inside the stale bound. Watched for two beats only, it was taken over while it ran.
    const late = setTimeout(() => {
      const now = new Date(Date.now() + 1_000);
      void utimes(layout.instanceLockFile(), now, now);
    }, 300);
    try {
      const attempt = acquireInstanceLock(layout, { ...options(), heartbeatMs: 20, staleMs: 3_000 });
      await expect(attempt).rejects.toThrow(InstanceLocked);
      expect((await readHolder()).token).toBe("theirs");
    } finally {
      clearTimeout(late);
    }
  });

  it("a fresh lock the file system stamped later in this clock's millisecond is not ahead of it: refused at once", async () => {
    const nowMs = Date.UTC(2026, 11, 7, 12);
    await writeLock({ pid: 4242, host: "elsewhere.example", token: "theirs" }, nowMs);
    // The exclusive create's stamp, finer than a millisecond: half a millisecond after nowMs.
    await utimes(layout.instanceLockFile(), (nowMs + 0.5) / 1000, (nowMs + 0.5) / 1000);
    const attempt = acquireInstanceLock(layout, { ...options(), heartbeatMs: 20, clock: () => nowMs });
    await expect(attempt).rejects.toThrow(InstanceLocked);
    expect((await readHolder()).token).toBe("theirs");
  });

  it("a live holder whose stamps are ahead of this clock is refused after the watch, saying the clocks disagree", async () => {
    const holder = await acquireInstanceLock(layout, {
      ...options(),
      heartbeatMs: 10,
      clock: () => Date.now() + HOUR_MS,
    });
    // As its first beat stamps it (the exclusive create took the file system's time).
    const ahead = new Date(Date.now() + HOUR_MS);
    await utimes(layout.instanceLockFile(), ahead, ahead);
    const attempt = acquireInstanceLock(layout, { ...options(), heartbeatMs: 50, staleMs: 200 });
    await expect(attempt).rejects.toThrow(InstanceLocked);
    await expect(attempt).rejects.toThrow(
      /its stamp was 3600 s ahead of this process's clock: the two clocks disagree/,
    );
    expect(await holder.stillHeld()).toBe(true);
    await holder.release();
  });

  it("a takeover marker stamped ahead of this clock, left by a takeover that died, is removed once watched standing still", async () => {
    await writeLock({ pid: 4242, host: "elsewhere.example", token: "dead" }, Date.now() - 60_000);
    const digest = createHash("sha256")
      .update(await readFile(layout.instanceLockFile()))
      .digest("hex")
      .slice(0, 32);
    const marker = layout.instanceLockTakeoverFile(digest);
    // A takeover that died half-way, before the clock was stepped back an hour: before, its age
    // (this clock minus its mtime) never passed the stale bound, and every start waited on it.
    await writeFile(marker, "9999\n");
    await utimes(marker, new Date(Date.now() + HOUR_MS), new Date(Date.now() + HOUR_MS));
    const lock = await acquireInstanceLock(layout, { ...options(), heartbeatMs: 50 });
    expect((await readHolder()).token).toBe(lock.holder.token);
    await lock.release();
    expect(await readdir(layout.instanceDir())).toEqual([]);
  });
});
