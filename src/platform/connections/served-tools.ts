import type { Tool } from "@modelcontextprotocol/client";
import { fitsToolName } from "../../sources/tool-names.ts";

/**
 * A connection's pinned tools as a client is listed them, done at listing, not photographing, so
 * every snapshot already on disk is served so too; the snapshot, its digests and the drift check
 * keep the server's own words.
 * - Each display title (`title`, and `annotations.title`) names the connection it comes from, as
 *   "Write a file (evil)". An MCP client shows the title before the name, and a server chooses its
 *   titles: without this, a member approving "Write a file" could not tell `files__write` from
 *   `evil__write` (adr/0175).
 * - A tool whose `<source>__<tool>` is over the 128 characters MCP allows is left out, so neither
 *   listed nor called (the router calls only what is listed). Photographing refuses such a tool
 *   (snapshot.ts); a snapshot taken before that could hold one (adr/0039, amended 2026-12-07).
 */
export function servedTools(source: string, tools: readonly Tool[]): Tool[] {
  return tools.filter((tool) => fitsToolName(source, tool.name)).map((tool) => attributed(source, tool));
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
