import type { ContentBlock, ConversationEvent } from "./model.ts";

/**
 * Longer runs are not words anyone searches for (a base64 blob, a long hash): the index keeps
 * none, and a query naming one is refused (finder.ts), not answered as if it were not there.
 */
export const MAX_TOKEN_CHARS = 64;
const WORD = /[\p{L}\p{N}]+/gu;
const ANY_WORD = /[\p{L}\p{N}]/u;
const NON_ASCII = /[^ -~\t\n\r]/;

/** The searchable text of an event: what a person would read in it. */
export function eventText(event: ConversationEvent): string {
  if (event.type === "title") return event.title;
  if (event.type === "fork") return "";
  return event.content.map(blockText).join("\n");
}

export function blockText(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "file":
      return block.fileId;
    case "tool_call":
      return `${block.name} ${block.arguments === undefined ? "" : JSON.stringify(block.arguments)}`;
    case "tool_result":
      return block.content;
  }
}

/**
 * The distinct words of a text, as the index keeps and a query names them: Unicode letters
 * and digits, NFKC-normalised and lowercased, so "Zebra" finds "zebra" and "ｚｅｂｒａ".
 */
export function tokenize(text: string): string[] {
  return distinctWords(text, Number.POSITIVE_INFINITY).words;
}

/**
 * The first `max` distinct words of a text, in the order it holds them, and whether it holds
 * more. The scan stops at the first word past `max`, so a text of nothing but distinct words
 * costs the index as much as its first `max` words (adr/0078).
 */
export function distinctWords(text: string, max: number): { words: string[]; more: boolean } {
  const words = new Set<string>();
  if (max <= 0) return { words: [], more: ANY_WORD.test(text) };
  for (const match of normalize(text).matchAll(WORD)) {
    const word = match[0];
    if (word.length > MAX_TOKEN_CHARS || words.has(word)) continue;
    if (words.size === max) return { words: [...words], more: true };
    words.add(word);
  }
  return { words: [...words], more: false };
}

/** The first word of a text longer than MAX_TOKEN_CHARS, read as `tokenize` reads it; undefined when none is. */
export function overlongWord(text: string): string | undefined {
  for (const match of normalize(text).matchAll(WORD)) {
    if (match[0].length > MAX_TOKEN_CHARS) return match[0];
  }
  return undefined;
}

function normalize(text: string): string {
  // NFKC changes nothing in printable ASCII text, so most text skips its copy.
  return (NON_ASCII.test(text) ? text.normalize("NFKC") : text).toLowerCase();
}
