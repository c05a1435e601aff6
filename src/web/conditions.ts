/** HTTP preconditions on an entity tag (RFC 9110 §13.1). */

import { InvalidInput } from "../errors.ts";

/**
 * One element of an entity-tag list: `W/` if weak, then the quoted tag, between optional
 * whitespace, then a comma or the end (RFC 9110 §8.8.3; §5.6.1 lets an element be empty).
 */
const LIST_ELEMENT = /[ \t]*(?:(?:W\/)?("[\x21\x23-\x7E\x80-\xFF]*"))?[ \t]*(?:,|$)/y;

/**
 * Whether an `If-None-Match` condition holds for a representation whose ETag is `etag`
 * (RFC 9110 §13.1.2): `false` when the header is `*` or lists a tag that matches `etag` by the
 * weak comparison (`W/` ignored on either side), `true` when it lists none that does, undefined
 * when there is no header or it is not a list of entity-tags (then it is ignored).
 */
export function noneMatchHolds(header: string | undefined, etag: string): boolean | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return false;
  const opaque = etag.replace(/^W\//, "");
  let matched = false;
  LIST_ELEMENT.lastIndex = 0;
  do {
    const element = LIST_ELEMENT.exec(header);
    if (!element) return undefined;
    if (element[1] === opaque) matched = true;
  } while (LIST_ELEMENT.lastIndex < header.length);
  return !matched;
}

/**
 * Whether an `If-Match` condition holds for a representation whose ETag is `etag` (RFC 9110
 * §13.1.1): `true` when the header is `*` or lists a tag equal to `etag` by the strong comparison
 * (a weak tag on either side never matches), `false` when it lists none that does, undefined when
 * there is no header. A header that is neither `*` nor a list of entity-tags is refused
 * (InvalidInput), never ignored: ignored, `If-Match: <sha256>` without its quotes made a
 * conditional DELETE delete whatever was stored (ADR 0152, files-rest.test.ts "If-Match that is
 * not").
 */
export function matchHolds(header: string | undefined, etag: string): boolean | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return true;
  const strong = !etag.startsWith("W/");
  let matched = false;
  LIST_ELEMENT.lastIndex = 0;
  do {
    const element = LIST_ELEMENT.exec(header);
    if (!element) {
      throw new InvalidInput(
        'If-Match is * or entity tags in double quotes, separated by commas, e.g. "<sha256>" with its quotes as an ETag gives it; nothing was done.',
      );
    }
    const weak = /^[ \t]*W\//.test(element[0]);
    if (strong && !weak && element[1] === etag) matched = true;
  } while (LIST_ELEMENT.lastIndex < header.length);
  return matched;
}

/**
 * Whether the preconditions of a request that changes or removes the representation whose ETag
 * is `etag` hold (RFC 9110 §13.2.2): `If-Match` first, then `If-None-Match`, whose false answer
 * is a 412 for such a method, never a 304. `If-None-Match: *` is false whenever the
 * representation exists: it asks to act only where there is none, and a DELETE that ignored it
 * deleted the file (ADR 0152 amendment, files-rest.test.ts "If-None-Match"). Unlike a read's,
 * an `If-None-Match` that is not entity tags is refused as `If-Match` is, so a mistyped condition
 * never makes a change unconditional.
 */
export function changeConditionsHold(
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
  etag: string,
): boolean {
  if (matchHolds(ifMatch, etag) === false) return false;
  const noneMatch = noneMatchHolds(ifNoneMatch, etag);
  if (ifNoneMatch !== undefined && noneMatch === undefined) {
    throw new InvalidInput(
      'If-None-Match is * or entity tags in double quotes, separated by commas, e.g. "<sha256>" with its quotes as an ETag gives it; nothing was done.',
    );
  }
  return noneMatch !== false;
}
