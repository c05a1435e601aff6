/** One byte range of a representation of `size` bytes: `start` to `end`, both inclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/;

/**
 * What a `Range` header asks of a representation of `size` bytes (RFC 9110 §14.1.2): one
 * satisfiable range; "unsatisfiable" when its one range starts past the end; undefined when there
 * is no header, or it is not one range of bytes Atrium serves (several ranges, another unit, a
 * malformed one), which a server may ignore by answering the whole representation, or it is a
 * suffix of an empty representation.
 */
export function requestedRange(
  header: string | undefined,
  size: number,
): ByteRange | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const match = SINGLE_RANGE.exec(header.trim());
  if (!match) return undefined;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return undefined;
  if (first === "") {
    // A suffix: the last N bytes, or all of a smaller representation.
    const length = Number(last);
    if (length === 0) return "unsatisfiable";
    // Satisfiable (RFC 9110 §14.1.1: a non-zero suffix-length is), and its answer is the whole,
    // empty representation: no Content-Range can name zero bytes, so it is a 200, not a 206.
    if (size === 0) return undefined;
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}
