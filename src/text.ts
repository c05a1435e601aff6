/** Half of a surrogate pair: with the `u` flag a whole pair is one code point and never matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Zero-width, bidirectional-control and other invisible format characters. */
const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u061C\uFEFF\u00AD]/;

/**
 * True when a one-line label (a name, a title) holds a C0 control character, DEL, or half of a
 * surrogate pair (text no encoder can write: it could not be put in a header or shown): such a
 * label could not be shown safely.
 */
export function isUnshowable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return LONE_SURROGATE.test(text);
}

/**
 * True when prose meant for a model or a person (a description, instructions) holds what a
 * reader cannot see: C0 and C1 controls other than tab and newline, invisible format characters,
 * or half of a surrogate pair.
 */
export function hidesText(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return INVISIBLE.test(text) || LONE_SURROGATE.test(text);
}

/** The text with each half of a surrogate pair replaced by U+FFFD, so any encoder can write it. */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDFFF]/gu, "\uFFFD");
}
