import { describe, expect, it } from "vitest";
import { noneMatchHolds } from "../../../src/web/send-file.ts";

// If-None-Match against a download's ETag (RFC 9110 §13.1.2, weak comparison): false means the
// client's copy is current (304).
describe("noneMatchHolds", () => {
  const etag = '"0a1b"';

  it.each([
    ["the same tag", '"0a1b"'],
    ["the tag marked weak", 'W/"0a1b"'],
    ["a list that holds it", '"ffff", W/"0a1b"'],
    ["a list with empty elements", ' , "ffff",, "0a1b" '],
    ["a list whose other tag holds a comma", '"a,b", "0a1b"'],
    ["*", "*"],
    ["* with spaces", " * "],
  ])("does not hold for %s", (_case, header) => {
    expect(noneMatchHolds(header, etag)).toBe(false);
  });

  it.each([
    ["another tag", '"ffff"'],
    ["the tag in another case", '"0A1B"'],
  ])("holds for %s", (_case, header) => {
    expect(noneMatchHolds(header, etag)).toBe(true);
  });

  it.each([
    ["no header", undefined],
    ["an unquoted tag", "0a1b"],
    ["an unterminated tag", '"0a1b'],
    ["tags without a comma between them", '"ffff" "0a1b"'],
    ["a tag followed by other text", '"0a1b" junk'],
  ])("is ignored for %s", (_case, header) => {
    expect(noneMatchHolds(header, etag)).toBeUndefined();
  });
});
