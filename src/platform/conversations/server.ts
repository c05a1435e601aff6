import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { AppTools } from "../app-tools.ts";
import { pageInput, platformInput } from "../platform-tool.ts";
import { DEFAULT_EVENT_PAGE, EVENT_ORDERS, MAX_EVENT_PAGE } from "./event-page.ts";
import { MAX_TOKEN_CHARS } from "./event-text.ts";
import { EXPORT_FORMATS, toJsonExport, toMarkdown } from "./export.ts";
import {
  DEFAULT_LIST_PAGE,
  DEFAULT_SEARCH_PAGE,
  listConversations,
  MAX_LIST_PAGE,
  MAX_QUERY_CHARS,
  MAX_QUERY_WORDS,
  MAX_SEARCH_PAGE,
  searchConversations,
} from "./finder.ts";
import { type ConversationSummary, eventDrafts, MAX_EVENTS_PER_APPEND, titleInput } from "./model.ts";
import type { ConversationStore } from "./store.ts";

const id = z.string().describe("The conversation id, cv_ followed by 24 hex digits.");
const events = eventDrafts.describe(
  `Events in order, 1 to ${MAX_EVENTS_PER_APPEND}: {"type":"message","role":"user"|"assistant"|"system"|"tool","content":[blocks]} ` +
    'or {"type":"title","title":"…"}. A block is {"type":"text","text"}, {"type":"file","fileId"} (your own file here), ' +
    '{"type":"tool_call","id","name","arguments"} or {"type":"tool_result","toolCallId","content","isError"}.',
);

/** Said after a search's results when its budget stopped it (`truncated`, adr/0120, adr/0140). */
const TRUNCATED_SEARCH =
  "Stopped early: these words are in so many of your events that this search reached its limit of work, so " +
  "older conversations and messages holding them are not above. Add a rarer word of the message you are looking for";

/** The conversations app's tools, one table for every workspace (each call brings its workspace); every conversation is the caller's own. */
export function createConversationsTools(store: ConversationStore): AppTools {
  const tools = new AppTools("atrium-conversations");
  tools.registerTool(
    "create",
    {
      description:
        "Start a conversation in this workspace, private to you: a transcript any of your clients can append to, read, search, fork and export.",
      inputSchema: platformInput({ title: titleInput.optional(), events: events.optional() }),
      annotations: { title: "Create a conversation", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { title?: string; events?: z.infer<typeof eventDrafts> }) => {
      const conversation = await store.create(
        caller.workspaceId,
        caller.principalId,
        args.title ?? "",
        args.events,
        caller.access,
      );
      return summaryResult(conversation, `Created ${conversation.id}.`);
    },
  );

  tools.registerTool(
    "append",
    {
      description:
        "Append events (messages, a title change) to one of your conversations, in order, all or none.",
      inputSchema: platformInput({ id, events }),
      annotations: { title: "Append to a conversation", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { id: string; events: z.infer<typeof eventDrafts> }) => {
      const done = await store.append(
        caller.workspaceId,
        caller.principalId,
        args.id,
        args.events,
        caller.access,
      );
      const seqs = done.events.map((event) => event.seq);
      return {
        content: [
          { type: "text", text: `Appended events ${seqs[0]}–${seqs[seqs.length - 1]} to ${args.id}.` },
        ],
        structuredContent: { ...done },
      };
    },
  );

  tools.registerTool(
    "get",
    {
      description:
        "Read one of your conversations: its summary and a page of its events, oldest or newest first. " +
        "When `nextCursor` is returned, call again with it as `cursor` (and the same order) for the next page.",
      inputSchema: platformInput({
        id,
        order: z.enum(EVENT_ORDERS).optional().describe("oldest (default) or newest first."),
        ...pageInput("Events", MAX_EVENT_PAGE, DEFAULT_EVENT_PAGE),
      }),
      annotations: { title: "Read a conversation", readOnlyHint: true },
    },
    async (caller, args: { id: string; order?: "oldest" | "newest"; cursor?: string; limit?: number }) => {
      const page = await store.get(caller.workspaceId, caller.principalId, args.id, args);
      return { content: [{ type: "text", text: JSON.stringify(page) }], structuredContent: { ...page } };
    },
  );

  tools.registerTool(
    "list",
    {
      description:
        "List your conversations in this workspace, most recently updated first, with title, message count and updated time. " +
        "When `nextCursor` is returned, call again with it as `cursor` for the next page.",
      inputSchema: platformInput(pageInput("Conversations", MAX_LIST_PAGE, DEFAULT_LIST_PAGE)),
      annotations: { title: "List conversations", readOnlyHint: true },
    },
    async (caller, args: { cursor?: string; limit?: number }) => {
      const page = await listConversations(store.indexes, caller.workspaceId, caller.principalId, args);
      const lines = page.conversations.map(
        (c) => `${c.id}  ${c.title || "(untitled)"}  ${c.messageCount} messages  updated ${c.updatedAt}`,
      );
      if (page.nextCursor) lines.push(`More: call again with cursor "${page.nextCursor}".`);
      return {
        content: [
          { type: "text", text: lines.length > 0 ? lines.join("\n") : "You have no conversations here yet." },
        ],
        structuredContent: { ...page },
      };
    },
  );

  tools.registerTool(
    "search",
    {
      description:
        "Find your conversations in this workspace with a message holding every word of `query` (case-insensitive, whole words), " +
        "most recently updated first, each with its matching events. Words in very many of your events may stop " +
        "the search early: it then says `truncated`, and `nextCursor` goes on to older matches (or add a rarer word). " +
        "When `nextCursor` is returned, call again with it as `cursor` and the same query for the next page.",
      inputSchema: platformInput({
        query: z
          .string()
          .min(1)
          .max(MAX_QUERY_CHARS)
          .describe(
            `Words to find, up to ${MAX_QUERY_WORDS} distinct ones, each up to ${MAX_TOKEN_CHARS} letters or digits, e.g. invoice march.`,
          ),
        ...pageInput("Conversations", MAX_SEARCH_PAGE, DEFAULT_SEARCH_PAGE),
      }),
      annotations: { title: "Search conversations", readOnlyHint: true },
    },
    async (caller, args: { query: string; cursor?: string; limit?: number }) => {
      const page = await searchConversations(
        store.indexes,
        store,
        caller.workspaceId,
        caller.principalId,
        args,
      );
      const lines = page.results.map(
        (r) => `${r.conversation.id}  ${r.conversation.title || "(untitled)"}  ${r.matches} matching events`,
      );
      if (lines.length === 0)
        lines.push(
          page.truncated
            ? "No conversation found before the search stopped."
            : "No conversation of yours here holds those words.",
        );
      // A truncated page always carries a cursor to the rest (adr/0144).
      if (page.truncated) lines.push(`${TRUNCATED_SEARCH}, or call again with the cursor.`);
      if (page.nextCursor) lines.push(`More: call again with cursor "${page.nextCursor}".`);
      return {
        content: [{ type: "text", text: lines.join("\n") }],
        structuredContent: { ...page },
      };
    },
  );

  tools.registerTool(
    "fork",
    {
      description:
        "Start a new conversation from a prefix of one of yours: its events up to `throughSeq` (all when not given), then a fork-origin event. The original is unchanged.",
      inputSchema: platformInput({
        id,
        throughSeq: z.number().int().min(1).optional().describe("The seq of the last event to keep."),
        title: titleInput.optional(),
      }),
      annotations: { title: "Fork a conversation", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { id: string; throughSeq?: number; title?: string }) => {
      const conversation = await store.fork(
        caller.workspaceId,
        caller.principalId,
        args.id,
        args,
        caller.access,
      );
      return summaryResult(conversation, `Forked ${args.id} as ${conversation.id}.`);
    },
  );

  tools.registerTool(
    "export",
    {
      description: "Export one of your conversations whole, as Markdown (default) or as JSON.",
      inputSchema: platformInput({ id, format: z.enum(EXPORT_FORMATS).optional() }),
      annotations: { title: "Export a conversation", readOnlyHint: true },
    },
    async (caller, args: { id: string; format?: "markdown" | "json" }) => {
      const { conversation, events: all } = await store.readWhole(
        caller.workspaceId,
        caller.principalId,
        args.id,
      );
      if (args.format === "json") {
        const exported = toJsonExport(conversation, all);
        return {
          content: [{ type: "text", text: JSON.stringify(exported) }],
          structuredContent: { ...exported },
        };
      }
      const markdown = toMarkdown(conversation, all);
      return {
        content: [{ type: "text", text: markdown }],
        structuredContent: { format: "markdown", markdown },
      };
    },
  );

  tools.registerTool(
    "update",
    {
      description: "Change the title of one of your conversations (recorded as a title event).",
      inputSchema: platformInput({ id, title: titleInput }),
      annotations: { title: "Retitle a conversation", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { id: string; title: string }) => {
      const title = [{ type: "title" as const, title: args.title }];
      const { conversation } = await store.append(
        caller.workspaceId,
        caller.principalId,
        args.id,
        title,
        caller.access,
      );
      return summaryResult(conversation, `Retitled ${args.id}.`);
    },
  );

  tools.registerTool(
    "delete",
    {
      description: "Delete one of your conversations and its whole log. This cannot be undone.",
      inputSchema: platformInput({ id }),
      annotations: { title: "Delete a conversation", readOnlyHint: false, destructiveHint: true },
    },
    async (caller, args: { id: string }) => {
      await store.delete(caller.workspaceId, caller.principalId, args.id, caller.access);
      return { content: [{ type: "text", text: `Deleted ${args.id}.` }], structuredContent: { id: args.id } };
    },
  );

  return tools;
}

function summaryResult(conversation: ConversationSummary, text: string): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: { conversation } };
}
