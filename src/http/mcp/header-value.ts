// 2026-07-28 Streamable HTTP, Value Encoding: a header value that is not plain ASCII travels as
// =?base64?<base64 of its UTF-8>?=. The markers are case-sensitive and exact, and the servers
// "MUST decode" it before comparing it with the body: `=?BASE64?…?=` is a plain value, as every
// conforming intermediary routing on the header reads it, so it is compared as it stands rather
// than decoded into a name the intermediary never saw (Mcp-Name and Mcp-Param-* alike).

const PREFIX = "=?base64?";
const SUFFIX = "?=";
// Canonical padded Base64: whole groups of four, `=` only as the last group's padding.
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The value a header carries: a sentinel-wrapped one decoded, any other as it is; undefined when
 * the sentinel wraps something that is not canonical Base64 of UTF-8 (the spec's "invalid
 * characters", which the server must refuse).
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (
    !(value.startsWith(PREFIX) && value.endsWith(SUFFIX) && value.length >= PREFIX.length + SUFFIX.length)
  ) {
    return value;
  }
  const base64 = value.slice(PREFIX.length, value.length - SUFFIX.length);
  if (!CANONICAL_BASE64.test(base64)) return undefined;
  try {
    return UTF8.decode(Buffer.from(base64, "base64"));
  } catch {
    return undefined;
  }
}
