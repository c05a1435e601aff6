import { randomBytes } from "node:crypto";
import { rm, utimes } from "node:fs/promises";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { BootError } from "../errors.ts";
import { type Clock, systemClock } from "../kernel/clock.ts";
import type { Logger } from "../log.ts";
import { writeFileAtomic } from "../storage/atomic.ts";
import { createFileExclusive } from "../storage/exclusive.ts";
import { isFolder, makeFolderIfMissing, makeRootIfMissing } from "../storage/folders.ts";
import type { StorageLayout } from "../storage/paths.ts";
import { type LockHolder, lockText, readLock, type SeenLock } from "./lock-file.ts";
import { canCheckPid, isPidAlive, type PidSpace, readPidSpace } from "./lock-pid-space.ts";
import { removeStaleLock, TAKEOVER_RETRY_MS, watchHeartbeat } from "./lock-takeover.ts";

export type { LockHolder } from "./lock-file.ts";

// One data root belongs to one running process (issue 16, ADR 0022): two processes on one
// root each keep an in-memory copy of the index, users, grants and keys and write it over the
// other's. The lock is a file made by exclusive create, refreshed by a heartbeat, and taken
// over only when its holder is provably gone or has stopped refreshing it.

/** How often the holder refreshes the lock's mtime. */
export const LOCK_HEARTBEAT_MS = 5_000;
/** A lock not refreshed for this long is stale, whoever holds it (a frozen or remote holder). */
export const LOCK_STALE_MS = 30_000;
/**
 * A lock stale by its age is watched for this many heartbeats before it is taken over: one for
 * the beat that is due, one for a beat late behind a slow disk or a busy event loop. The
 * holder's interval is taken to be this process's own (LOCK_HEARTBEAT_MS, outside tests).
 */
const WATCH_HEARTBEATS = 2;
/** How long a process waits for another one's takeover of the same stale lock to finish. */
const TAKEOVER_WAIT_MS = 5_000;

/** The root is held by a live process; boot stops and says by whom and what to do. */
export class InstanceLocked extends BootError {
  constructor(
    readonly root: string,
    readonly holder: LockHolder | undefined,
    lockPath: string,
    staleMs: number,
    /** Why its PID was not checked, or how its heartbeat was seen, when that is worth saying. */
    detail = "",
  ) {
    const who = holder
      ? `Atrium process ${holder.pid} on host ${holder.host}, started ${holder.startedAt} (${holder.publicUrl})${detail}`
      : `a process whose lock file cannot be read`;
    super(
      `The data root ${root} is in use by ${who}. Stop that process first, or start this one with ` +
        `another --data DIR. If that process is gone, its lock ${lockPath} is taken over once it is ` +
        `${Math.round(staleMs / 1000)} s old and two more heartbeats have not come (adr/0133).`,
    );
  }
}

/**
 * The lock stopped being this process's before boot finished (the process was frozen past the
 * stale bound and another took the root over): boot stops without serving, so two never do.
 */
export class InstanceLockLostWhileBooting extends BootError {
  constructor(readonly lockPath: string) {
    super(
      `The instance lock ${lockPath} stopped being this process's while it was starting (another ` +
        "process took the data root over, or the lock was removed), so this one stops without " +
        "serving. The lock names the process that holds the root now; stop that one first to start this one.",
    );
  }
}

/**
 * The lock a command that writes the root holds while it runs (`credentials reseal`, `archive
 * purge`): it asks `stillHeld` before each item it writes, and stops there once the lock is not
 * its own any more (ADR 0146).
 */
export type CommandLock = Pick<InstanceLock, "stillHeld" | "release">;

/** What a command says when it stopped because its lock stopped being this process's. */
export function lockLostSentence(lockPath: string): string {
  return (
    `the instance lock ${lockPath} stopped being this process's while it ran (another process ` +
    "took the data root over, or the lock was removed), so it stopped before writing anything more"
  );
}

export interface InstanceLock {
  readonly holder: LockHolder;
  /** Records the URL once the port is known (`--port 0`). */
  setPublicUrl(publicUrl: string): Promise<void>;
  /**
   * Whether the lock is still this process's, read from the file now rather than at the last
   * heartbeat: boot asks just before it listens, so a process frozen while booting and taken
   * over meanwhile never starts serving (test/integration/instance-lock.test.ts "while booting").
   */
  stillHeld(): Promise<boolean>;
  /** Stops the heartbeat and removes the lock, unless another process has taken it over since. */
  release(): Promise<void>;
}

export interface LockOptions {
  publicUrl: string;
  log: Logger;
  heartbeatMs?: number;
  staleMs?: number;
  /**
   * The instance clock. A lock's age is this clock's reading minus the file's mtime, and the
   * heartbeat stamps the mtime from it, so the two always agree.
   */
  clock?: Clock;
  /**
   * Called once if the heartbeat finds the lock is no longer this process's (it was frozen
   * past the stale bound and taken over, or the file was removed): it must stop serving.
   */
  onLost?: () => void;
  /**
   * Refuse a root without `_instance/` instead of creating it: a command that only works on a
   * root a server has run on (`credentials reseal`) must not turn a mistyped `--data` into a new,
   * empty root and report success on it.
   */
  existingRoot?: boolean;
}

// Tokens of the locks this process holds: a lock naming this PID on this host is live only if
// this process made it; otherwise an earlier process had the same PID (PID 1 in a container).
const heldTokens = new Set<string>();

/**
 * Takes `<root>/_instance/instance.lock`, creating the root and `_instance/` (0700) when
 * missing. Called before anything else reads or writes the root. Throws InstanceLocked when a
 * live process holds it.
 */
export async function acquireInstanceLock(
  layout: StorageLayout,
  options: LockOptions,
): Promise<InstanceLock> {
  try {
    return await acquire(layout, options);
  } catch (error) {
    if (error instanceof BootError) throw error;
    // A filesystem without link(), a root it may not write: say which file, not a stack trace.
    throw new BootError(
      `Cannot take the instance lock ${layout.instanceLockFile()}: ${(error as Error).message}`,
    );
  }
}

async function acquire(layout: StorageLayout, options: LockOptions): Promise<InstanceLock> {
  const staleMs = options.staleMs ?? LOCK_STALE_MS;
  if (options.existingRoot && !(await isFolder(layout.instanceDir()))) {
    throw new BootError(
      `${layout.root} is not a data root Atrium has run on (it has no _instance/ folder): check ` +
        "--data, or storage.root in the instance file. Nothing was created.",
    );
  }
  // Flushed in their parents: every instance-wide record lives under `_instance/`, and a folder
  // found already there is not flushed again by the writers that use it.
  await makeRootIfMissing(layout.root);
  await makeFolderIfMissing(layout.instanceDir());
  const path = layout.instanceLockFile();
  const here = await readPidSpace();
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    pidNs: here.pidNs,
    bootId: here.bootId,
    startedAt: new Date((options.clock ?? systemClock)()).toISOString(),
    publicUrl: options.publicUrl,
    token: randomBytes(16).toString("hex"),
  };
  // Known as ours before the file exists: between the create and the return, a racer in this
  // same process (tests; one PID) must not judge the new lock "left by an earlier process".
  heldTokens.add(holder.token);
  try {
    await takeLock(layout, options, path, holder, staleMs, here);
  } catch (error) {
    heldTokens.delete(holder.token);
    throw error;
  }
  return holdLock(path, holder, options);
}

async function takeLock(
  layout: StorageLayout,
  options: LockOptions,
  path: string,
  holder: LockHolder,
  staleMs: number,
  here: PidSpace,
): Promise<void> {
  const clock = options.clock ?? systemClock;
  const watchMs = WATCH_HEARTBEATS * (options.heartbeatMs ?? LOCK_HEARTBEAT_MS);
  // Counted in the retries slept, not read from the clock, which a step back would stretch.
  let waitedMs = 0;
  for (;;) {
    if (await createFileExclusive(path, lockText(holder))) return;
    const seen = await readLock(path);
    if (seen === undefined) continue; // released in between: compete again
    const judged = stalenessOf(seen, staleMs, clock(), here);
    if (judged === undefined) {
      throw new InstanceLocked(layout.root, seen.holder, path, staleMs, unchecked(seen.holder, here));
    }
    if (judged.ageMs !== undefined) {
      // A stamp ahead has no age to have passed the stale bound, so the watch spans it: a holder
      // it is refused after a second's step back, missing two beats, was taken over while it ran.
      const watched = await watchHeartbeat(path, seen, judged.ahead ? Math.max(staleMs, watchMs) : watchMs);
      // The watch is not time spent waiting for another process's takeover.
      waitedMs = 0;
      if (watched === "changed") continue;
      if (watched === "refreshed") {
        options.log.warn(
          { root: layout.root, holder: seen.holder ?? "unreadable", ageMs: judged.ageMs, watchedMs: watchMs },
          "the instance lock looks stale by this clock, but its holder refreshed it: the clocks disagree",
        );
        const skew = ` (it refreshed the lock while this process watched, though ${byThisClock(judged.ageMs)}: the two clocks disagree)`;
        throw new InstanceLocked(layout.root, seen.holder, path, staleMs, skew);
      }
    }
    const removed = await removeStaleLock(layout, seen, watchMs);
    if (removed === "cleared") {
      // A dead takeover's marker was watched and removed: that watch was not waiting either.
      waitedMs = 0;
      continue;
    }
    if (removed === "taken") {
      const watched =
        judged.ageMs === undefined ? {} : { watchedMs: judged.ahead ? Math.max(staleMs, watchMs) : watchMs };
      options.log.warn(
        { root: layout.root, previous: seen.holder ?? "unreadable", reason: judged.reason, ...watched },
        "taking over a stale instance lock",
      );
      continue;
    }
    waitedMs += removed === "busy" ? TAKEOVER_RETRY_MS : removed.waitedMs;
    if (waitedMs > TAKEOVER_WAIT_MS) {
      throw new BootError(
        `Another process kept taking over the stale lock ${path} for ${TAKEOVER_WAIT_MS / 1000} s; start again.`,
      );
    }
    if (removed === "busy") await sleep(TAKEOVER_RETRY_MS);
  }
}

function holdLock(path: string, holder: LockHolder, options: LockOptions): InstanceLock {
  const { log } = options;
  let lost = false;
  // Set as release() begins: a beat under way whose read lands after the removal found no lock
  // and called onLost, a second close() in the middle of an ordinary stop (lock.test.ts "release").
  let released = false;
  const ours = async () => (await readLock(path))?.holder?.token === holder.token;
  const heartbeat = setInterval(async () => {
    if (lost || released) return;
    try {
      const held = await ours();
      // Beats overlap when a read takes longer than a beat: the loss is acted on once, as
      // onLost's second call would be a stop's second signal (lock.test.ts "overlap").
      if (lost || released) return;
      if (!held) {
        lost = true;
        clearInterval(heartbeat);
        log.error(
          { lock: path },
          "the instance lock is no longer this process's (taken over or removed); stopping",
        );
        options.onLost?.();
        return;
      }
      const now = new Date((options.clock ?? systemClock)());
      await utimes(path, now, now);
    } catch (error) {
      if (released) return;
      log.warn({ lock: path, err: error }, "could not refresh the instance lock; trying again next beat");
    }
  }, options.heartbeatMs ?? LOCK_HEARTBEAT_MS);
  // The heartbeat alone never keeps the process alive.
  heartbeat.unref();
  return {
    holder,
    async stillHeld() {
      // A loss already found is the answer, without a read that could throw where the lock was.
      if (lost) return false;
      const held = await ours();
      // Read after the file too: a beat that found the loss while this read was in flight has
      // turned itself off, and the bytes this read saw from before the takeover say "held".
      return held && !lost;
    },
    async setPublicUrl(publicUrl) {
      holder.publicUrl = publicUrl;
      // Replaced whole by rename: the lock is never absent or half-written meanwhile.
      if (await ours()) await writeFileAtomic(path, lockText(holder));
    },
    async release() {
      released = true;
      clearInterval(heartbeat);
      heldTokens.delete(holder.token);
      if (await ours()) await rm(path, { force: true });
    },
  };
}

/**
 * Why the lock no longer protects anything; `ageMs` (this clock minus the holder's stamp,
 * negative for a stamp ahead of this clock) when only its heartbeat can say so, by the watch.
 */
interface Staleness {
  reason: string;
  ageMs?: number;
  /** Stamped ahead of this clock: no age, watched for the whole stale bound. */
  ahead?: boolean;
}

/** How old the lock looked by this process's clock, in words. */
function byThisClock(ageMs: number): string {
  return ageMs < 0
    ? `its stamp was ${Math.round(-ageMs / 1000)} s ahead of this process's clock`
    : `by this process's clock the lock was ${Math.round(ageMs / 1000)} s old`;
}

/** Why the lock no longer protects anything, or undefined while its holder may be alive. */
function stalenessOf(seen: SeenLock, staleMs: number, nowMs: number, here: PidSpace): Staleness | undefined {
  const { holder } = seen;
  // Only a PID read where this process reads PIDs: a holder in another container on this host
  // has a PID that is not running here, or is this process's own (PID 1 in each), and is alive
  // (test/unit/instance/lock.test.ts "another PID namespace").
  if (holder && holder.host === hostname() && canCheckPid(holder, here)) {
    if (holder.pid === process.pid && !heldTokens.has(holder.token))
      return { reason: "left by an earlier process with this PID" };
    if (!isPidAlive(holder.pid)) return { reason: "its process is gone" };
  }
  // At the clock's precision: a file made by the exclusive create is stamped by the file system
  // finer than a millisecond, and later in the millisecond than this clock reads it.
  const ageMs = nowMs - Math.floor(seen.mtimeMs);
  if (ageMs > staleMs) return { reason: `not refreshed for ${Math.round(ageMs / 1000)} s`, ageMs };
  // A stamp ahead of this clock has no age (CONTEXT.md "clock step"): the clock was stepped back
  // since (an NTP step, a restored snapshot, a saved time restored at boot), or runs behind the
  // holder's. Judged live, a dead holder's lock refused every start until the clock caught up
  // with its stamp; only the watch can tell (lock.test.ts "a heartbeat stamped ahead").
  if (ageMs < 0)
    return {
      reason: `its heartbeat is stamped ${Math.round(-ageMs / 1000)} s ahead of this clock`,
      ageMs,
      ahead: true,
    };
  return undefined;
}

/** Says why a live-looking holder on this host was judged by its heartbeat, not its PID. */
function unchecked(holder: LockHolder | undefined, here: PidSpace): string {
  if (!holder || holder.host !== hostname() || canCheckPid(holder, here)) return "";
  return holder.pidNs === undefined || holder.bootId === undefined
    ? " (its lock, from an older Atrium, does not say which PID namespace its PID is in)"
    : " (in another PID namespace or boot than this process: another container, say)";
}
