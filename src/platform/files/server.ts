import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { toolError } from "../../sources/router.ts";
import { hasLoneSurrogate, spelledOut } from "../../text.ts";
import { AppTools } from "../app-tools.ts";
import { pageInput, platformInput, progressReporter } from "../platform-tool.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./listings.ts";
import { type FileMeta, isTextual } from "./model.ts";
import type { FileStore } from "./store.ts";

/** Past this size files__read answers with a pointer to the REST download instead. */
export const MAX_MCP_READ_BYTES = 8 * 1024 * 1024;

const fileIdInput = { id: z.string().describe("The file id, fl_ followed by 24 hex digits.") };

/** The files app's tools, one table for every workspace: the caller, and so the workspace, comes from the router. */
export function createFilesTools(files: FileStore): AppTools {
  const tools = new AppTools("atrium-files");

  tools.registerTool(
    "write",
    {
      description:
        "Store a new file in this workspace, private to you. Give the content as `text` (UTF-8) or `base64`, not both.",
      inputSchema: platformInput({
        name: z.string().describe("A name to show for the file, e.g. notes.md."),
        text: z.string().optional().describe("The content as UTF-8 text."),
        base64: z.string().optional().describe("The content, base64-encoded, for binary data."),
        mimeType: z
          .string()
          .optional()
          .describe("The MIME type; text/plain for text, else application/octet-stream."),
      }),
      annotations: { title: "Write a file", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { name: string; text?: string; base64?: string; mimeType?: string }, call) => {
      if ((args.text === undefined) === (args.base64 === undefined)) {
        return toolError("Give the content as exactly one of `text` or `base64`.");
      }
      // Whole groups of four: Node decodes a ragged tail by dropping it, which would store fewer
      // bytes than were sent and say nothing ("AAAAA" was stored as 3 bytes).
      if (
        args.base64 !== undefined &&
        (!/^[A-Za-z0-9+/]*={0,2}$/.test(args.base64) || args.base64.length % 4 !== 0)
      ) {
        return toolError(
          "`base64` is not valid base64: use the standard alphabet, in groups of four characters with = padding.",
        );
      }
      // UTF-8 has no bytes for half a surrogate pair: Node writes U+FFFD in its place, which would
      // store other text than was sent and say "Stored" (test/integration/files-write-text.test.ts).
      if (args.text !== undefined && hasLoneSurrogate(args.text)) {
        return toolError(
          "`text` holds half of a surrogate pair (a lone \\uD800–\\uDFFF), which UTF-8 cannot store: send whole Unicode text, or the bytes as `base64`.",
        );
      }
      const content =
        args.text !== undefined ? Buffer.from(args.text, "utf8") : Buffer.from(args.base64 ?? "", "base64");
      const mimeType = args.mimeType ?? (args.text !== undefined ? "text/plain; charset=utf-8" : undefined);
      const progress = progressReporter(call, (done, total) => `Stored ${done} of ${total} bytes.`);
      const file = { name: args.name, mimeType };
      const meta = await files.write(
        caller.workspaceId,
        caller.principalId,
        file,
        content,
        caller.access,
        progress,
      );
      return metaResult(meta, `Stored ${meta.name} as ${meta.id} (${meta.size} bytes).`);
    },
  );

  tools.registerTool(
    "list",
    {
      description:
        "List your files in this workspace, newest first, with id, name, type and size. " +
        "One page at a time: when `nextCursor` is returned, call again with it as `cursor` for the next page.",
      inputSchema: platformInput({
        ...pageInput("Files", MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
      }),
      annotations: { title: "List files", readOnlyHint: true },
    },
    async (caller, args: { cursor?: string; limit?: number }) => {
      const page = await files.page(caller.workspaceId, caller.principalId, args);
      // A name stored before today's rules may hold a line separator or a bidi control: spelled out,
      // it cannot fake a second file's line (test/integration/files-list-names.test.ts).
      const lines = page.files.map((f) => `${f.id}  ${spelledOut(f.name)}  ${f.mimeType}  ${f.size} bytes`);
      if (page.nextCursor) lines.push(`More files: call this tool again with cursor "${page.nextCursor}".`);
      return {
        content: [
          { type: "text", text: lines.length > 0 ? lines.join("\n") : "You have no files here yet." },
        ],
        structuredContent: { ...page },
      };
    },
  );

  tools.registerTool(
    "info",
    {
      description: "Show a file's metadata: name, type, size, digest, created time.",
      inputSchema: platformInput(fileIdInput),
      annotations: { title: "File info", readOnlyHint: true },
    },
    async (caller, args: { id: string }) => {
      const meta = await files.info(caller.workspaceId, caller.principalId, args.id);
      return metaResult(meta, jsonOf(meta));
    },
  );

  tools.registerTool(
    "read",
    {
      description: `Read a file's content: text for textual types, base64 otherwise. Files over ${MAX_MCP_READ_BYTES} bytes are downloaded over REST instead.`,
      inputSchema: platformInput(fileIdInput),
      annotations: { title: "Read a file", readOnlyHint: true },
    },
    async (caller, args: { id: string }) => {
      const meta = await files.info(caller.workspaceId, caller.principalId, args.id);
      if (meta.size > MAX_MCP_READ_BYTES) {
        return toolError(`${meta.id} is ${meta.size} bytes; download it with GET /v1/files/${meta.id}.`);
      }
      const { content } = await files.read(caller.workspaceId, caller.principalId, args.id);
      const text = isTextual(meta.mimeType) ? decodeUtf8(content) : undefined;
      const encoding = text === undefined ? "base64" : "utf8";
      const body = text ?? content.toString("base64");
      return {
        content: [{ type: "text", text: body }],
        structuredContent: { id: meta.id, name: meta.name, mimeType: meta.mimeType, encoding, content: body },
      };
    },
  );

  tools.registerTool(
    "delete",
    {
      description: "Delete one of your files in this workspace. This cannot be undone.",
      inputSchema: platformInput(fileIdInput),
      annotations: { title: "Delete a file", readOnlyHint: false, destructiveHint: true },
    },
    async (caller, args: { id: string }) => {
      await files.delete(caller.workspaceId, caller.principalId, args.id, caller.access);
      return { content: [{ type: "text", text: `Deleted ${args.id}.` }], structuredContent: { id: args.id } };
    },
  );

  return tools;
}

/**
 * A file's metadata as JSON text, written once per metadata object: the index holds each file's
 * metadata frozen (listings.ts), so its text cannot change while the object lives.
 */
const metaJson = new WeakMap<FileMeta, string>();

function jsonOf(meta: FileMeta): string {
  let text = metaJson.get(meta);
  if (text === undefined) {
    text = JSON.stringify(meta);
    metaJson.set(meta, text);
  }
  return text;
}

function metaResult(meta: FileMeta, text: string): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: { ...meta } };
}

function decodeUtf8(content: Buffer): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(content);
  } catch {
    return undefined;
  }
}
