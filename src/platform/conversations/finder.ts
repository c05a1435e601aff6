import { InvalidInput } from "../../errors.ts";
import type { ConversationIndexes } from "./conversation-indexes.ts";
import { MAX_TOKEN_CHARS, overlongWord, tokenize } from "./event-text.ts";
import { checkLimit, decodeListCursor, encodeListCursor } from "./list-order.ts";
import type { ConversationEvent, ConversationSummary } from "./model.ts";
import { decodeSearchCursor, encodeSearchCursor } from "./search-cursor.ts";
import type { ConversationStore } from "./store.ts";

export const DEFAULT_LIST_PAGE = 50;
export const MAX_LIST_PAGE = 1000;
export const DEFAULT_SEARCH_PAGE = 20;
export const MAX_SEARCH_PAGE = 100;
/** Matching events shown per conversation found; `matches` says how many there are. */
export const MAX_EVENTS_PER_HIT = 5;
export const MAX_QUERY_CHARS = 500;
/**
 * Distinct words one query may hold. Each word's postings are walked, and a member chooses both
 * the words and, by what they append, how many postings each has: 250 one-letter words over a full
 * partition walked 5.5 million postings a search (adr/0115). Refused past it, never cut: a search
 * without some words would answer conversations without them as holding every word.
 */
export const MAX_QUERY_WORDS = 16;

export interface PageRequest {
  cursor?: string | undefined;
  limit?: number | undefined;
}

export interface ConversationPage {
  conversations: ConversationSummary[];
  nextCursor?: string;
}

export interface SearchResult {
  conversation: ConversationSummary;
  /** How many of its events hold every word of the query. */
  matches: number;
  /** The first of them, oldest first. */
  events: ConversationEvent[];
}

export interface SearchPage {
  results: SearchResult[];
  nextCursor?: string;
  /**
   * The search, or the part of it this page is of, walked its budget of postings
   * (IndexLimits.searchPostings, adr/0120) and stopped: every result holds every word, and `matches`
   * counts the matching events it found. Those it did not reach were indexed earlier: `nextCursor`
   * leads to them, after this part's other pages (adr/0140).
   */
  truncated: boolean;
  /**
   * What answered: how many conversations the index holds, how many logs this search read, and
   * how many of those conversations have words the index left out (adr/0078), which no search finds.
   */
  index: { conversations: number; logsRead: number; partial: number };
}

/** The owner's conversations in a workspace, most recently updated first, from the index alone. */
export async function listConversations(
  indexes: ConversationIndexes,
  workspaceId: string,
  ownerId: string,
  request: PageRequest,
): Promise<ConversationPage> {
  const limit = checkLimit(request.limit, MAX_LIST_PAGE, DEFAULT_LIST_PAGE);
  const after = request.cursor === undefined ? undefined : decodeListCursor(request.cursor);
  // The cursor is made under the partition's lock, from the page's own copies: made after it, from
  // the index's summaries, an append in between moved it and the next page repeated conversations
  // (finder.test.ts "an append racing a list").
  return indexes.read(workspaceId, ownerId, ({ index }) => {
    const { summaries, more } = index.page(after, limit);
    const last = summaries[summaries.length - 1];
    return more && last
      ? { conversations: summaries, nextCursor: encodeListCursor(last) }
      : { conversations: summaries };
  });
}

/**
 * The owner's conversations with an event holding every word of `query`: found in the index, and
 * only the logs of the conversations on this page are read, for their matching events.
 */
export async function searchConversations(
  indexes: ConversationIndexes,
  store: ConversationStore,
  workspaceId: string,
  ownerId: string,
  request: PageRequest & { query: string },
): Promise<SearchPage> {
  checkQuery(request.query);
  const limit = checkLimit(request.limit, MAX_SEARCH_PAGE, DEFAULT_SEARCH_PAGE);
  const cursor = request.cursor === undefined ? undefined : decodeSearchCursor(request.query, request.cursor);
  // The cursor is made under the partition's lock, as list's is: the page's logs are read after
  // it, and an append meanwhile moves the conversation (finder.test.ts "an append racing a search").
  const found = await indexes.read(workspaceId, ownerId, async ({ index, logsRead }) => {
    const { generation } = index;
    // Its numbers would name other events: a part of the search would be walked that the cursor
    // did not mean, skipping or repeating matches (search-cursor.test.ts "an index built again").
    // Said so it is true whatever gave the other generation: a load in a new process, a rebuild
    // from the logs, a renumbering compaction, or another owner's or workspace's index.
    if (cursor && cursor.generation !== generation) {
      throw new InvalidInput(
        "That cursor does not match the search index as it is now (the server restarted, or the index was " +
          "rebuilt or compacted since, or the cursor is from another search): search again without a cursor.",
      );
    }
    const part = { lo: cursor?.lo, hi: cursor?.hi };
    const { hits, more, truncated, reach, top } = await index.search(
      request.query,
      cursor?.after,
      limit,
      undefined,
      part,
    );
    const last = hits[hits.length - 1];
    // How far back this part's pages walk, and the next part goes below: pinned by the first page
    // cut short (its reach, set whenever the walk was cut, whether or not it met a live match:
    // search-cursor.test.ts "goes on below removed postings"), raised by a later one. Each page walked
    // back from the part's top with a whole budget again, a page with fewer postings to walk
    // (removed ones dropped since) reached further back than the first and found a conversation
    // above `after` that the next part, below that page's reach, left out (finder.test.ts "a later
    // page of a part reaches no further back").
    const floor = reach ?? cursor?.lo;
    // This part's next page of conversations first, walking the same numbers, then the part below
    // its floor (finder.test.ts "pages through a search past its budget").
    const next =
      more && last
        ? {
            generation,
            hi: top,
            lo: floor,
            after: { updatedAt: last.summary.updatedAt, id: last.summary.id },
          }
        : floor !== undefined && { generation, hi: floor };
    return {
      hits,
      // A later page of a cut part, walked back only to its floor, is as cut short as the part.
      truncated: truncated || cursor?.lo !== undefined,
      nextCursor: next ? encodeSearchCursor(request.query, next) : undefined,
      conversations: index.size,
      partial: index.partialCount,
      logsRead,
    };
  });
  const results: SearchResult[] = [];
  let logsRead = found.logsRead;
  for (const hit of found.hits) {
    logsRead += 1;
    try {
      const { conversation, events } = await store.eventsNumbered(
        workspaceId,
        ownerId,
        hit.summary.id,
        hit.seqs.slice(0, MAX_EVENTS_PER_HIT),
      );
      results.push({ conversation, matches: hit.seqs.length, events });
    } catch (error) {
      // Deleted since the index was read: it is simply not found any more.
      if ((error as { code?: string }).code !== "conversation_not_found") throw error;
    }
  }
  const index = { conversations: found.conversations, logsRead, partial: found.partial };
  const { truncated } = found;
  return found.nextCursor === undefined
    ? { results, truncated, index }
    : { results, nextCursor: found.nextCursor, truncated, index };
}

/** Refuses a query that search cannot answer as asked. */
function checkQuery(query: string): void {
  const shape = `query is one or more words (letters or digits), up to ${MAX_QUERY_CHARS} characters.`;
  if (query.length > MAX_QUERY_CHARS) throw new InvalidInput(shape);
  // Refused, not searched without it: the index keeps no word this long, and dropping it from the
  // query answered conversations without it as holding every word (conversations.test.ts
  // "refuses a query with a word longer than 64 characters").
  const long = overlongWord(query);
  if (long !== undefined) {
    throw new InvalidInput(
      `query word "${long.slice(0, 16)}…" is ${long.length} letters or digits long; search finds whole words ` +
        `of up to ${MAX_TOKEN_CHARS} letters or digits, and longer ones (a long hash, a base64 blob) are not indexed. ` +
        "Leave it out and search for other words of the same message.",
    );
  }
  const words = tokenize(query).length;
  if (words === 0) throw new InvalidInput(shape);
  // conversations.test.ts "refuses a query of more than 16 distinct words".
  if (words > MAX_QUERY_WORDS) {
    throw new InvalidInput(
      `query holds ${words} distinct words; search takes at most ${MAX_QUERY_WORDS}. ` +
        "Leave out the most common ones: every word must be in the same message anyway.",
    );
  }
}
