/** A short write's error name, which is how storage-full.ts knows it on either side of the in-memory pair. */
export const SHORT_WRITE = "ShortWrite";

/**
 * A write that stored fewer bytes than it was given. On a regular file that means the disk or the
 * quota ran out (or a file-size limit was met) during the write; the next write would fail with
 * ENOSPC, EDQUOT or EFBIG itself. Node's writes (`FileHandle.write`, `writev`, `writeSync`) do not
 * loop, so a caller that does not compare the count keeps a torn write and acknowledges it whole.
 */
export class ShortWrite extends Error {
  constructor(
    readonly bytesWritten: number,
    readonly bytesGiven: number,
  ) {
    super(`Wrote ${bytesWritten} of ${bytesGiven} bytes.`);
    this.name = SHORT_WRITE;
  }
}

/** Throws `ShortWrite` unless a write stored every byte it was given. */
export function wroteWhole(bytesWritten: number, bytesGiven: number): void {
  if (bytesWritten !== bytesGiven) throw new ShortWrite(bytesWritten, bytesGiven);
}
