import { describe, expect, it } from "vitest";
import { requestedRange } from "../../../src/web/byte-range.ts";

describe("requestedRange", () => {
  it("reads one range of bytes, a suffix or an open end, clipped to the representation", () => {
    expect(requestedRange("bytes=0-0", 10)).toEqual({ start: 0, end: 0 });
    expect(requestedRange("bytes=4-", 10)).toEqual({ start: 4, end: 9 });
    expect(requestedRange("bytes=-3", 10)).toEqual({ start: 7, end: 9 });
    expect(requestedRange("bytes=-30", 10)).toEqual({ start: 0, end: 9 });
    expect(requestedRange("bytes=8-99", 10)).toEqual({ start: 8, end: 9 });
  });

  it("says unsatisfiable for a range past the end, a zero-length suffix, or a first byte of an empty file", () => {
    expect(requestedRange("bytes=10-", 10)).toBe("unsatisfiable");
    expect(requestedRange("bytes=-0", 10)).toBe("unsatisfiable");
    expect(requestedRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(requestedRange("bytes=-0", 0)).toBe("unsatisfiable");
  });

  // RFC 9110 §14.1.1: a suffix-range with a non-zero length is satisfiable, an empty
  // representation's included; its answer is the whole (empty) representation.
  it("answers the whole representation for a suffix of an empty file", () => {
    expect(requestedRange("bytes=-5", 0)).toBeUndefined();
    expect(requestedRange("bytes=-1", 0)).toBeUndefined();
  });

  it("ignores what it does not serve: no header, several ranges, another unit, a backwards or malformed range", () => {
    for (const header of [
      undefined,
      "bytes=0-1,3-4",
      "items=0-1",
      "bytes=5-2",
      "bytes=-",
      "bytes=a-b",
      "bytes 0-1",
    ]) {
      expect(requestedRange(header, 10)).toBeUndefined();
    }
  });
});
