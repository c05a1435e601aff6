/** Half of a surrogate pair: with the `u` flag a whole pair is one code point and never matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/**
 * What Unicode says a renderer shows nothing for (Default_Ignorable_Code_Point): zero-width and
 * bidirectional controls, the soft hyphen, U+180E, variation selectors and the TAG characters
 * U+E0000–E007F, in which a whole sentence can ride unseen after a visible one. A hand-kept list
 * missed the last three.
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;
/** INVISIBLE, every occurrence: what showsNothing takes out. */
const INVISIBLE_EVERYWHERE = new RegExp(INVISIBLE.source, "gu");
/** The blank braille pattern, drawn as a space yet neither white space nor default-ignorable. */
const BLANK_BRAILLE = /\u2800/g;
/**
 * A text or emoji presentation selector right after what it selects for (the U+FE0F of "⚠️") is
 * seen: it changes the glyph. One at the start or after another selector changes nothing.
 */
const PRESENTATION_SELECTOR = /(?<=[^\p{Default_Ignorable_Code_Point}\p{Cc}])[\uFE0E\uFE0F]/gu;

/**
 * One zero-width non-joiner or joiner (U+200C, U+200D) between two visible characters, one of them
 * beyond ASCII, is part of how the text is written: Persian and Urdu words ("می‌خواهید"), Indic
 * conjuncts, an emoji sequence ("👩‍💻"). Between two ASCII letters it shapes nothing, and a run of
 * them, or one at a word's edge, can carry what a reader cannot see: those still hide text.
 */
const SHOWN = String.raw`[^\s\p{Cc}\p{Default_Ignorable_Code_Point}]`;
const SHOWN_BEYOND_ASCII = String.raw`[^\s\p{Cc}\p{Default_Ignorable_Code_Point}\p{ASCII}]`;
const JOINER_IN_WRITING = new RegExp(
  `(?<=${SHOWN_BEYOND_ASCII})[\u200C\u200D](?=${SHOWN})|(?<=${SHOWN})[\u200C\u200D](?=${SHOWN_BEYOND_ASCII})`,
  "gu",
);

/**
 * True when a one-line label (a name, a title) is not one line of whole text: it holds a control
 * character (C0, DEL, or C1, where U+0085 is NEXT LINE and U+009B a terminal's CSI), a line or
 * paragraph separator (U+2028, U+2029), or half of a surrogate pair (text no encoder can write: it
 * could not be put in a header or shown). Such a label could not be shown safely on its line.
 * It judges labels as they are given: no load of a stored record asks it, so a task, workspace
 * or file named before it refused C1 controls and the separators still loads
 * (test/integration/tasks-name-one-line.test.ts "a task stored with such a name").
 */
export function isUnshowable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029) return true;
  }
  return hasLoneSurrogate(text);
}

/** True when `text` holds half of a surrogate pair: text no encoder can write. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * True when prose meant for a model or a person (a description, instructions) holds what a
 * reader cannot see: C0 and C1 controls other than tab and newline, default-ignorable characters
 * (but a presentation selector where it shows, and a joiner where the writing uses one), or half
 * of a surrogate pair.
 */
export function hidesText(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f)) return true;
  }
  if (INVISIBLE.test(text)) {
    const written = partOfWriting(text);
    for (const match of text.matchAll(INVISIBLE_EVERYWHERE)) if (!written.has(match.index)) return true;
  }
  return LONE_SURROGATE.test(text);
}

/**
 * Where in `text` (offsets in code units) a presentation selector or a joiner is part of the
 * writing: a selector right after what it selects for, then a joiner between visible characters
 * once those selectors are taken out (a flag sequence's joiner follows its emoji's selector). The
 * one rule hidesText judges by and spelledOut keeps by: judged apart, a selector after white space
 * stood in as a visible character for spelledOut, so " \uFE0F\u200D\u0628" kept a joiner
 * hidesText refuses.
 */
function partOfWriting(text: string): Set<number> {
  const written = new Set<number>();
  for (const match of text.matchAll(PRESENTATION_SELECTOR)) written.add(match.index);
  if (!/[\u200C\u200D]/.test(text)) return written;
  // `text` without the selectors kept, and where each of its code units came from.
  let rest = "";
  const from: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    if (written.has(i)) continue;
    rest += text[i];
    from.push(i);
  }
  for (const match of rest.matchAll(JOINER_IN_WRITING)) written.add(from[match.index] as number);
  return written;
}

/**
 * True when a one-line label shows nothing: once every default-ignorable character (what
 * hidesText calls invisible: zero-width, bidirectional marks, joiners, selectors), white space
 * and the blank braille pattern (U+2800, drawn as a space but neither of those) are taken out,
 * nothing is left, so it looks empty and cannot be told from another such label. A joiner inside
 * visible text (the U+200D of an emoji sequence) leaves the text, so it shows.
 */
export function showsNothing(text: string): boolean {
  return text.replace(INVISIBLE_EVERYWHERE, "").replace(BLANK_BRAILLE, "").trim().length === 0;
}

/**
 * A control character (C0, DEL, C1), one a renderer shows nothing for (INVISIBLE), or a line or
 * paragraph separator (U+2028, U+2029), which starts a new line in text meant as one.
 */
const HIDDEN_CHARACTER = /\p{Cc}|\p{Default_Ignorable_Code_Point}|\p{Zl}|\p{Zp}/gu;

/**
 * `text` with every character a reader could not see, or that could rearrange what comes after it
 * (a bidirectional override), written out as `<U+202E>`: for a page or a listing that must show
 * text it did not choose, such as a refusal naming what a request said. What `hidesText` takes as
 * part of the writing stays as it is — an emoji's presentation selector, a joiner in a Persian word
 * or an emoji sequence — so a name like "👩‍💻 notes" is shown as written.
 */
export function spelledOut(text: string): string {
  const whole = wellFormed(text);
  const written = partOfWriting(whole);
  return whole.replace(HIDDEN_CHARACTER, (character, offset: number) =>
    written.has(offset)
      ? character
      : `<U+${(character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`,
  );
}

/**
 * Prose of many lines (a skill's file) with each character spelled out as spelledOut does, but
 * what prose may hold as it is: tabs and line ends, a CRLF's carriage return included (what
 * hidesText allows a skill's body, line by line; adr/0132).
 */
export function spelledOutProse(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const crlf = line.endsWith("\r");
      const shown = (crlf ? line.slice(0, -1) : line).split("\t").map(spelledOut).join("\t");
      return crlf ? `${shown}\r` : shown;
    })
    .join("\n");
}

/** The text with each half of a surrogate pair replaced by U+FFFD, so any encoder can write it. */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDFFF]/gu, "\uFFFD");
}
