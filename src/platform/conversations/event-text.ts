import type { ContentBlock, ConversationEvent } from "./model.ts";

/** Longer runs are not words anyone searches for (a base64 blob, a hash). */
const MAX_TOKEN_CHARS = 64;
const WORD = /[\p{L}\p{N}]+/gu;
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
  const words = new Set<string>();
  // NFKC changes nothing in printable ASCII text, so most text skips its copy.
  const normal = NON_ASCII.test(text) ? text.normalize("NFKC") : text;
  for (const match of normal.toLowerCase().matchAll(WORD)) {
    if (match[0].length <= MAX_TOKEN_CHARS) words.add(match[0]);
  }
  return [...words];
}
