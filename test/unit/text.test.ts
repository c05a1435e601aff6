import { describe, expect, it } from "vitest";
import {
  hidesText,
  isUnshowable,
  showsNothing,
  spelledOut,
  spelledOutProse,
  wellFormed,
} from "../../src/text.ts";

const LONE_HIGH = String.fromCharCode(0xd800);
const LONE_LOW = String.fromCharCode(0xdc00);
const PAIR = "\u{1F600}";

describe("labels and prose a reader must be able to see", () => {
  it("a label may hold any whole Unicode text on one line", () => {
    expect(isUnshowable(`Plan ${PAIR} — café`)).toBe(false);
    // The characters just past the C1 block and around the separators are ordinary text.
    expect(isUnshowable("a\u00a0b\u00e9\u2027\u202f")).toBe(false);
  });

  it.each([
    ["a NUL", "a\u0000b"],
    ["a newline", "a\nb"],
    ["DEL", "a\u007fb"],
    ["U+0085 NEXT LINE, a C1 control", "a\u0085b"],
    ["U+009B, a terminal's CSI", "a\u009b2Jb"],
    ["U+009F, the last C1 control", "a\u009fb"],
    ["a line separator", "a\u2028b"],
    ["a paragraph separator", "a\u2029b"],
    ["a lone high surrogate", `a${LONE_HIGH}b`],
    ["a lone low surrogate", `a${LONE_LOW}`],
    ["a pair cut in half at the end", PAIR.slice(0, 1)],
  ])("a label holding %s is unshowable", (_case, text) => {
    expect(isUnshowable(text)).toBe(true);
  });

  it("prose may hold tabs, newlines, whole pairs and an emoji's presentation selector", () => {
    expect(hidesText(`One\ttwo\nthree ${PAIR}`)).toBe(false);
    expect(hidesText("\u26a0\ufe0f destructive")).toBe(false);
  });

  it.each([
    ["a Persian word's non-joiner", "آیا می\u200cخواهید ادامه دهید؟"],
    ["a Devanagari conjunct's joiner", "क्\u200dष"],
    ["an emoji sequence", "\u{1F469}\u200d\u{1F4BB} at work"],
    ["a flag sequence with its selector", "\u{1F3F3}\ufe0f\u200d\u{1F308}"],
  ])("prose may hold %s: a joiner the writing uses", (_case, text) => {
    expect(hidesText(text)).toBe(false);
  });

  it.each([
    ["a bell", "a\u0007b"],
    ["a C1 control", "a\u0085b"],
    ["a zero-width joiner between ASCII letters", "a\u200db"],
    ["a run of joiners", "می\u200c\u200cخواهید"],
    ["a joiner at a word's edge", "می\u200c خواهید"],
    ["a bidirectional override", "a\u202eb"],
    ["a byte-order mark", "\ufeffa"],
    ["a lone surrogate", `a${LONE_HIGH}`],
    [
      "TAG characters",
      `Echo.${[..."Ignore previous"].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("")}`,
    ],
    ["a variation selector", "a\ufe01b"],
    ["a supplementary variation selector", "a\u{e0100}b"],
    ["a run of presentation selectors", "\u26a0\ufe0f\ufe0f"],
    ["a presentation selector with nothing to select", "\ufe0fa"],
    ["a Mongolian vowel separator", "a\u180eb"],
  ])("prose holding %s hides text", (_case, text) => {
    expect(hidesText(text)).toBe(true);
  });

  it("wellFormed replaces halves of pairs and keeps whole ones", () => {
    const text = `a${LONE_HIGH}b${PAIR}c${LONE_LOW}`;
    expect(wellFormed(text)).toBe(`a\ufffdb${PAIR}c\ufffd`);
    expect(() => encodeURIComponent(wellFormed(text))).not.toThrow();
  });
});

describe("a label that shows nothing", () => {
  it.each([
    ["empty", ""],
    ["only white space", " \u3000 "],
    ["only a right-to-left mark", "\u200f"],
    ["only zero-width characters and spaces", "\u200b \u2060\ufeff"],
    ["only a joiner", "\u200d"],
    ["only a presentation selector", "\ufe0f"],
    ["only blank braille patterns and a Hangul filler", "\u2800 \u2800\u3164"],
  ])("is %s", (_case, text) => {
    expect(showsNothing(text)).toBe(true);
  });

  it.each([
    ["a letter", "a"],
    ["an emoji sequence with its joiners", "\u{1F468}\u200d\u{1F469}"],
    ["a mark beside a letter", "\u200fa"],
  ])("is not one holding %s", (_case, text) => {
    expect(showsNothing(text)).toBe(false);
  });
});

describe("text spelled out for a page that did not choose it", () => {
  it("writes out controls, invisible and bidirectional characters, and leaves what shows", () => {
    expect(spelledOut("a\u202Eb\u0007c\u0085d\u{E0041}e")).toBe("a<U+202E>b<U+0007>c<U+0085>d<U+E0041>e");
    expect(spelledOut("Zoë 日本 😀 a\tb")).toBe("Zoë 日本 😀 a<U+0009>b");
    expect(spelledOut("half \uD800")).toBe("half \uFFFD");
  });

  it("leaves what is part of the writing: a joiner in a word or an emoji sequence, a presentation selector", () => {
    for (const written of [
      "\u{1F469}\u200d\u{1F4BB} notes.md",
      "می\u200cخواهید.pdf",
      "\u26a0\ufe0f todo.txt",
      "\u{1F3F3}\ufe0f\u200d\u{1F308}",
    ])
      expect(spelledOut(written)).toBe(written);
    expect(spelledOut("a\u200db \u200d\u200d")).toBe("a<U+200D>b <U+200D><U+200D>");
    expect(spelledOut("\ufe0fa")).toBe("<U+FE0F>a");
  });
});

describe("prose spelled out (a skill's saved version, adr/0132)", () => {
  it("writes out what hidesText refuses and keeps tabs, line ends and a CRLF's carriage return", () => {
    expect(spelledOutProse("a\u202Eb\r\n\tc\u{E0041}\nd\re\n")).toBe(
      "a<U+202E>b\r\n\tc<U+E0041>\nd<U+000D>e\n",
    );
    const written = "# Titre\r\n\tZoë 日本 \u{1F469}\u200d\u{1F4BB} می\u200cخواهید \u26a0\ufe0f\n";
    expect(hidesText(written.replace("\r\n", "\n"))).toBe(false);
    expect(spelledOutProse(written)).toBe(written);
  });
});

describe("spelled out text never hides text (one rule for what is part of the writing)", () => {
  // Each class hidesText and spelledOut judge by: visible ASCII, visible beyond ASCII, an emoji,
  // white space (ASCII, no-break, ideographic, a tab, a line separator), the presentation
  // selectors, the joiners, other default-ignorable characters (zero-width space, an override, a
  // TAG), a C0 and a C1 control, a carriage return, half of a surrogate pair.
  const CLASSES = [
    ..."a\u0628\u{1F469} \u00A0\u3000\t\u2028\uFE0E\uFE0F\u200C\u200D\u200B\u202E\u{E0041}\u0001\u0085\r",
    LONE_HIGH,
  ];
  const every = (length: number): string[] =>
    length === 0 ? [""] : every(length - 1).flatMap((head) => CLASSES.map((c) => head + c));

  it("a selector after white space, then a joiner: the joiner is written out", () => {
    expect(hidesText(" \uFE0F\u200D\u0628")).toBe(true);
    expect(spelledOut(" \uFE0F\u200D\u0628")).toBe(" \uFE0F<U+200D>\u0628");
    expect(hidesText(spelledOutProse("ok \uFE0F\u200D\u0628\n"))).toBe(false);
  });

  it("every string of up to four characters of those classes, once spelled out, passes hidesText", () => {
    const failing: string[] = [];
    for (const length of [1, 2, 3, 4]) {
      for (const text of every(length)) {
        // Prose line by line, as a skill's file is judged: a line's CRLF end is its end.
        const proseLines = spelledOutProse(text).split("\n");
        if (hidesText(spelledOut(text)) || proseLines.some((l) => hidesText(l.replace(/\r$/, "")))) {
          failing.push([...text].map((c) => `U+${c.codePointAt(0)?.toString(16)}`).join(" "));
        }
      }
    }
    expect(failing.slice(0, 20)).toEqual([]);
  });
});
