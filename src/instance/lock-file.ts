import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";

// The lock file's bytes (ADR 0022): what a holder writes, and what another process reads back
// to judge it. Every reading names the exact bytes it saw, so a takeover removes only those.

/** What `instance.lock` holds (JSON). The token tells this holder's lock from a later one. */
export interface LockHolder {
  pid: number;
  host: string;
  /**
   * Where `pid` was read (lock-pid-space.ts): its PID is checked only from the same PID
   * namespace and boot. Absent in a lock written before ADR 0133.
   */
  pidNs?: string | null;
  bootId?: string | null;
  startedAt: string;
  publicUrl: string;
  token: string;
}

/** One reading of the lock file. */
export interface SeenLock {
  /** Undefined when the file does not parse as a lock. */
  holder: LockHolder | undefined;
  /** Names exactly these bytes, so a takeover can check it removes the lock it judged. */
  digest: string;
  mtimeMs: number;
}

/** The lock file as it is now, or undefined when there is none. */
export async function readLock(path: string): Promise<SeenLock | undefined> {
  try {
    const [bytes, stats] = await Promise.all([readFile(path), stat(path)]);
    return { holder: parseHolder(bytes), digest: digestOf(bytes), mtimeMs: stats.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function parseHolder(bytes: Buffer): LockHolder | undefined {
  try {
    const value = JSON.parse(bytes.toString("utf8")) as Partial<LockHolder>;
    // A PID of 0 or below would name a process group to kill(2): never accepted.
    if (!Number.isInteger(value.pid) || (value.pid as number) <= 0) return undefined;
    if (typeof value.host !== "string" || typeof value.token !== "string") return undefined;
    return {
      pid: value.pid as number,
      host: value.host,
      // Anything but a string or null is as good as absent: the PID is then not checked.
      ...(isPidSpaceField(value.pidNs) ? { pidNs: value.pidNs } : {}),
      ...(isPidSpaceField(value.bootId) ? { bootId: value.bootId } : {}),
      startedAt: String(value.startedAt),
      publicUrl: String(value.publicUrl),
      token: value.token,
    };
  } catch {
    return undefined;
  }
}

function isPidSpaceField(value: unknown): value is string | null {
  return typeof value === "string" || value === null;
}

export function digestOf(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex").slice(0, 32);
}

export function lockText(holder: LockHolder): string {
  return `${JSON.stringify(holder, null, 2)}\n`;
}
