import { isJsonObject } from "./json-shape.ts";

// Every list Atrium serves over MCP is answered whole, in one page with no `nextCursor`, so no
// cursor sent back to it can be one it gave out. MCP pagination: "Invalid cursors SHOULD result
// in an error with code -32602". Answering the first page again instead would hand a client that
// resumes with another server's (or another list's) cursor the items it already has. The
// platform's own paged tools refuse a forged cursor the same way (files__list).
const WHOLE_LISTS: ReadonlySet<string> = new Set([
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "skills/list",
]);

/** Why a list request's cursor is refused (an Invalid params message), or undefined when it carries none. */
export function cursorRefusal(method: string, params: unknown): string | undefined {
  if (!WHOLE_LISTS.has(method) || !isJsonObject(params) || params.cursor === undefined) return undefined;
  return (
    `Invalid params for ${method}: params.cursor is not a cursor this server gave out. ` +
    `Its ${method} answer is one whole page, with no nextCursor: ask again without a cursor.`
  );
}
