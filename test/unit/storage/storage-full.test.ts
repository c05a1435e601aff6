import { describe, expect, it } from "vitest";
import { InsufficientStorage } from "../../../src/errors.ts";
import { unexpectedErrorOf, unexpectedToolResult } from "../../../src/sources/tool-failure.ts";
import { WrittenNotFlushed } from "../../../src/storage/atomic.ts";
import { SHORT_WRITE } from "../../../src/storage/short-write.ts";
import {
  refusedForStorage,
  STORAGE_FULL_WARNING,
  storageFullReason,
} from "../../../src/storage/storage-full.ts";
import { memoryLog } from "../../helpers/memory-log.ts";

const refused = (code: string) => Object.assign(new Error(`${code}: refused, write`), { code });

/** An error as the router gets it from a platform app: across the in-memory pair, as its fields. */
const crossed = (error: Error) => unexpectedErrorOf(unexpectedToolResult(error)) as Error;

describe("what a full disk is", () => {
  it.each(["ENOSPC", "EDQUOT", "EFBIG"])(
    "%s is, by its code, on either side of the in-memory pair",
    (code) => {
      expect(storageFullReason(refused(code))).toBe(code);
      expect(storageFullReason(crossed(refused(code)))).toBe(code);
    },
  );

  it("a short write is, by its name, on either side of the in-memory pair", () => {
    const short = Object.assign(new Error("Wrote 1 of 5 bytes to a new file."), { name: SHORT_WRITE });
    expect(storageFullReason(short)).toBe("short write");
    expect(storageFullReason(crossed(short))).toBe("short write");
  });

  it("a write that landed and then met ENOSPC at its folder's flush is not: it was stored", () => {
    const landed = new WrittenNotFlushed("/data/ws/acks/usr.json", refused("ENOSPC"));
    expect(landed.code).toBe("ENOSPC");
    expect(storageFullReason(landed)).toBeUndefined();
    expect(storageFullReason(crossed(landed))).toBeUndefined();
  });

  it.each([
    ["a failing disk (EIO)", refused("EIO")],
    ["a read-only filesystem (EROFS): a failing disk, checked before trusting the root", refused("EROFS")],
    ["a bug", new TypeError("undefined is not a function")],
  ])("%s is not", (_what, error) => {
    expect(storageFullReason(error)).toBeUndefined();
  });
});

describe("a full disk at an edge", () => {
  it("becomes InsufficientStorage and one warning with the filesystem's reason, not an error", () => {
    const { log, lines } = memoryLog();
    expect(refusedForStorage(refused("EDQUOT"), log, { requestId: "r-1" })).toBeInstanceOf(
      InsufficientStorage,
    );
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, msg: STORAGE_FULL_WARNING, reason: "EDQUOT", requestId: "r-1" }),
    ]);
  });

  it("leaves any other error to the edge, unlogged", () => {
    const { log, lines } = memoryLog();
    expect(refusedForStorage(refused("EIO"), log, { requestId: "r-2" })).toBeUndefined();
    expect(lines).toEqual([]);
  });
});
