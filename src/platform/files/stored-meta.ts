import { parseStoredJson } from "../../storage/atomic.ts";
import { isPositionTime } from "../list-position.ts";
import type { FileMeta } from "./model.ts";

/**
 * A meta.json that parses but is not a file's metadata (`{}`, `null`, a size that is not a
 * number): named by its path and what is wrong, never by its values, as a meta.json that does not
 * parse is named by where it stops being JSON (adr/0076). Both are handled alike: the file is left
 * out of listings, said once (listings.ts), and a read of it by id fails as an unexpected error
 * whose log line names the file (test/unit/platform/files/file-index.test.ts).
 */
export class MalformedMeta extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path} is not a file's metadata: ${problem}.`);
    this.name = "MalformedMeta";
  }
}

/**
 * A file's content whose size on disk is not its meta.json's `size`: cut short or grown outside
 * Atrium (a writer never changes content in place). Refused like a content file that cannot be
 * read, as an unexpected error (500, "failed unexpectedly" over MCP), whose one log line names the
 * path and both sizes, never the bytes: served, it would answer a Content-Length it cannot keep,
 * and the short bytes would pass for the file (test/integration/files-streams.test.ts).
 */
export class ContentSizeMismatch extends Error {
  constructor(
    readonly path: string,
    readonly sizeOnDisk: number,
    readonly sizeInMeta: number,
  ) {
    super(
      `${path} holds ${sizeOnDisk} bytes, not the ${sizeInMeta} its meta.json says. Restore the file's folder from a backup, or move it out of the data root.`,
    );
    this.name = "ContentSizeMismatch";
  }
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * The metadata a meta.json's text holds, for the file its folder names (`where`: the path is
 * authoritative, the ids inside are copies; CONTEXT.md, Primitive). Every field the app reads is
 * checked: a name and a MIME type that are strings (the listing, the download's headers), a size
 * in whole bytes (Content-Length, range arithmetic), a SHA-256 in hex (the ETag, sent as a header)
 * and a creation time a cursor can hold (list-position.ts).
 */
export function parseFileMeta(
  path: string,
  text: string,
  where: Pick<FileMeta, "id" | "workspaceId" | "ownerId">,
): FileMeta {
  const stored = parseStoredJson(path, text);
  if (typeof stored !== "object" || stored === null || Array.isArray(stored)) {
    throw new MalformedMeta(path, "it is not a JSON object");
  }
  const { name, mimeType, size, sha256, createdAt } = stored as Record<string, unknown>;
  if (typeof name !== "string") throw new MalformedMeta(path, "its name is not a string");
  if (typeof mimeType !== "string") throw new MalformedMeta(path, "its mimeType is not a string");
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
    throw new MalformedMeta(path, "its size is not a whole number of bytes");
  }
  if (typeof sha256 !== "string" || !SHA256_HEX.test(sha256)) {
    throw new MalformedMeta(path, "its sha256 is not 64 lowercase hex digits");
  }
  if (!isPositionTime(createdAt)) throw new MalformedMeta(path, "its createdAt is not an ISO 8601 UTC time");
  const { id, workspaceId, ownerId } = where;
  // In the order the writer gives them (store.ts), so a file's JSON reads the same either way.
  return { id, name, mimeType, size, sha256, workspaceId, ownerId, visibility: "private", createdAt };
}
