/**
 * What a partition index's memory is estimated by, so its byte budget is kept without asking V8;
 * measured with V8 on Node 20 (64-bit, no pointer
 * compression; adr/0078): a word costs its map entry, its string and its one posting (a heap
 * number); its second posting makes it an array (a header and a backing store), and each
 * posting in an array 8 bytes plus the growth room an array keeps. A conversation's entry is
 * its summary's object and strings, with a title of up to 200 characters. An event's number
 * (event-numbers.ts) is one slot of an array, as a posting is.
 */
const WORD_BYTES = 64;
const LIST_BYTES = 48;
const POSTING_BYTES = 12;
export const ENTRY_BYTES = 800;
export const EVENT_BYTES = POSTING_BYTES;

/**
 * The estimated bytes a word's posting at `at` adds: the first, the word itself; the second, the
 * array both are moved into; each later one, its slot.
 */
export function addedBytes(word: string, at: number): number {
  if (at === 0) return WORD_BYTES + word.length;
  return at === 1 ? LIST_BYTES + 2 * POSTING_BYTES : POSTING_BYTES;
}

/** The estimated bytes of one word with `count` postings. */
export function wordBytes(word: string, count: number): number {
  return WORD_BYTES + word.length + (count > 1 ? LIST_BYTES + count * POSTING_BYTES : 0);
}
