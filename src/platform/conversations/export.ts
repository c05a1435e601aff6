import type { ContentBlock, ConversationEvent, ConversationSummary } from "./model.ts";

export const EXPORT_FORMATS = ["markdown", "json"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export const JSON_EXPORT_FORMAT = "atrium.conversation/v1";

/** An export as JSON: the summary and every event as stored, oldest first. */
export interface JsonExport {
  format: typeof JSON_EXPORT_FORMAT;
  conversation: ConversationSummary;
  events: ConversationEvent[];
}

export function toJsonExport(conversation: ConversationSummary, events: ConversationEvent[]): JsonExport {
  return { format: JSON_EXPORT_FORMAT, conversation, events };
}

/**
 * An export as Markdown, for a person to read: a heading per message with its role and time, and
 * its text exactly as written (never escaped or wrapped), so the words survive a copy out of it.
 */
export function toMarkdown(conversation: ConversationSummary, events: readonly ConversationEvent[]): string {
  const parts = [
    `# ${conversation.title || "Untitled conversation"}`,
    `Conversation ${conversation.id}, created ${conversation.createdAt}.`,
  ];
  for (const event of events) {
    if (event.type === "message") {
      parts.push(`## ${event.role} · ${event.at}`, ...event.content.map(blockMarkdown));
    } else if (event.type === "title" && event.seq > 1) {
      parts.push(`_Title changed to “${event.title}” at ${event.at}._`);
    } else if (event.type === "fork") {
      parts.push(`_Forked from ${event.from.conversationId} after event ${event.from.seq}, at ${event.at}._`);
    }
  }
  return `${parts.join("\n\n")}\n`;
}

function blockMarkdown(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "file":
      return `[File ${block.fileId}](/v1/files/${block.fileId})`;
    case "tool_call":
      return `**Tool call** \`${block.name}\` (${block.id})\n\n${fenced(JSON.stringify(block.arguments ?? {}, null, 2), "json")}`;
    case "tool_result":
      return `**Tool result** for ${block.toolCallId}${block.isError ? " (error)" : ""}\n\n${fenced(block.content, "")}`;
  }
}

/** A fenced block whose fence is longer than any run of backticks inside, so content cannot close it. */
function fenced(text: string, language: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((run) => run[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}${language}\n${text}\n${fence}`;
}
