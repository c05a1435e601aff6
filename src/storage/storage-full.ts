import { InsufficientStorage } from "../errors.ts";
import type { Logger } from "../log.ts";
import { WRITTEN_NOT_FLUSHED } from "./atomic.ts";
import { SHORT_WRITE } from "./short-write.ts";

/** The filesystem's codes for "no more room": no space, a quota used up, a file-size limit met. */
const STORAGE_FULL_CODES: ReadonlySet<string> = new Set(["ENOSPC", "EDQUOT", "EFBIG"]);

/** What the operator's log says, once per refused write, whichever surface the write came through. */
export const STORAGE_FULL_WARNING = "storage full: a write was refused and nothing stored";

/**
 * Why a write failed for want of storage: the filesystem's code (ENOSPC, EDQUOT, EFBIG: `ulimit -f`
 * or a filesystem's largest file), or "short write", which is how any of them shows in the middle
 * of a write; undefined for any other failure. A short write is known by its name, not its class:
 * a platform app's error reaches the router as its fields (sources/tool-failure.ts).
 */
export function storageFullReason(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // Landed, only its folder's flush failed: stored, so never told "nothing stored" (adr/0166).
  if (error.name === WRITTEN_NOT_FLUSHED) return undefined;
  if (error.name === SHORT_WRITE) return "short write";
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === "string" && STORAGE_FULL_CODES.has(code) ? code : undefined;
}

/**
 * The one mapping of a full data root, for every edge (REST's error reply, the router's tool
 * failures, the OAuth endpoints, the consent page): a write any store could not make is the
 * operator's to fix, not a bug, so it becomes InsufficientStorage for the edge to answer in its own
 * shape, and the operator is told once with the filesystem's reason, as a warning without a stack
 * (adr/0165; test/integration/storage-full.test.ts). Undefined for any other error.
 */
export function refusedForStorage(
  error: unknown,
  log: Logger,
  fields: Readonly<Record<string, unknown>>,
): InsufficientStorage | undefined {
  const reason = storageFullReason(error);
  if (reason === undefined) return undefined;
  log.warn({ ...fields, reason }, STORAGE_FULL_WARNING);
  return new InsufficientStorage();
}
