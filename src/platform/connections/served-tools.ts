import type { Tool } from "@modelcontextprotocol/client";

/**
 * A connection's pinned tools as a client is listed them: each display title (`title`, and
 * `annotations.title`) names the connection it comes from, as "Write a file (evil)". An MCP client
 * shows the title before the name, and a server chooses its titles: without this, a member
 * approving "Write a file" could not tell `files__write` from `evil__write` (adr/0175). Done at
 * listing, not photographing, so every snapshot already on disk is served so too; the snapshot,
 * its digests and the drift check keep the server's own words.
 */
export function servedTools(source: string, tools: readonly Tool[]): Tool[] {
  return tools.map((tool) => attributed(source, tool));
}

function attributed(source: string, tool: Tool): Tool {
  const { title, annotations } = tool;
  if (title === undefined && annotations?.title === undefined) return tool;
  return {
    ...tool,
    ...(title === undefined ? {} : { title: titleFrom(source, title) }),
    ...(annotations?.title === undefined
      ? {}
      : { annotations: { ...annotations, title: titleFrom(source, annotations.title) } }),
  };
}

/** The source exactly as the tool's name begins with it: `my_notes` for a personal connection. */
function titleFrom(source: string, title: string): string {
  return `${title} (${source})`;
}
