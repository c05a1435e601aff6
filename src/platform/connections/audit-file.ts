import { writeSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { dirname } from "node:path";
import type { Timers } from "../../kernel/timers.ts";
import { syncDir } from "../../storage/atomic.ts";
import { wroteWhole } from "../../storage/short-write.ts";

const NEWLINE = 0x0a;
/** How long an appended line may wait in the page cache before it is flushed to the disk. */
export const AUDIT_SYNC_DELAY_MS = 1_000;

interface OpenFile {
  path: string;
  handle: FileHandle;
  cancelSync?: () => void;
}

/**
 * One workspace's open day file. A line is written at once, synchronously — so it survives the process being
 * killed, the kernel holds it — and flushed to the disk within AUDIT_SYNC_DELAY_MS, together with
 * every line written meanwhile, and the file is closed then; an fsync per line would cost more
 * than the remote call it records (ADR 0037, bench/remote.ts). The caller serialises calls for one
 * workspace, and runs the flush that falls due (`flushDue`) in turn with them, owning its failure.
 */
export class AuditFile {
  private file: OpenFile | undefined;

  constructor(
    private readonly timers: Timers,
    private readonly flushDue: () => void,
  ) {}

  async append(path: string, line: string): Promise<void> {
    if (this.file?.path !== path) {
      await this.flush();
      this.file = { path, handle: await openForAppend(path) };
    }
    this.write(this.file, line);
  }

  /** Appends when `path` is the file already open, with no wait at all; `false` when it is not. */
  appendNow(path: string, line: string): boolean {
    if (this.file?.path !== path) return false;
    this.write(this.file, line);
    return true;
  }

  private write(file: OpenFile, line: string): void {
    // A synchronous write of a few hundred bytes into the page cache takes microseconds; through
    // the thread pool it took a tenth of a millisecond, a third of what the gate may cost. A short
    // count (the disk filled during it) is a failed write: the line is torn, never on record.
    wroteWhole(writeSync(file.handle.fd, line), Buffer.byteLength(line));
    file.cancelSync ??= this.timers.after(AUDIT_SYNC_DELAY_MS, this.flushDue);
  }

  /** Flushes what was written and closes the file; the next append opens it again. */
  async flush(): Promise<void> {
    const file = this.file;
    if (!file) return;
    this.file = undefined;
    file.cancelSync?.();
    try {
      await file.handle.sync();
    } finally {
      await file.handle.close();
    }
  }
}

/**
 * Opens `path` to append (created 0600). A file that does not end with a newline ends with a torn
 * line (a crash mid-write), so a newline is written first and the next line starts on its own. A
 * new file's name is flushed in its folder.
 */
async function openForAppend(path: string): Promise<FileHandle> {
  const handle = await open(path, "a+", 0o600);
  try {
    const { size } = await handle.stat();
    if (size === 0) await syncDir(dirname(path));
    else if ((await lastByte(handle, size)) !== NEWLINE) await handle.appendFile("\n");
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function lastByte(handle: FileHandle, size: number): Promise<number | undefined> {
  const buffer = Buffer.alloc(1);
  const { bytesRead } = await handle.read(buffer, 0, 1, size - 1);
  return bytesRead === 1 ? buffer[0] : undefined;
}
