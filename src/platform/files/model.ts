import { randomBytes } from "node:crypto";
import { hasControlCharacters } from "../../text.ts";

export interface FileMeta {
  id: string;
  name: string;
  mimeType: string;
  size: number;
  sha256: string;
  workspaceId: string;
  ownerId: string;
  visibility: "private";
  createdAt: string;
}

const FILE_ID = /^fl_[0-9a-f]{24}$/;
const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(;.{0,200})?$/i;
export const MAX_FILE_NAME_CHARS = 255;
export const DEFAULT_MIME_TYPE = "application/octet-stream";

export function newFileId(): string {
  return `fl_${randomBytes(12).toString("hex")}`;
}

export function isFileId(value: string): boolean {
  return FILE_ID.test(value);
}

/** A file name is a label, never a path; it is refused only when it could not be shown. */
export function checkFileName(name: unknown): string | undefined {
  if (typeof name !== "string") return undefined;
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_FILE_NAME_CHARS || hasControlCharacters(trimmed)) {
    return undefined;
  }
  return trimmed;
}

export function checkMimeType(value: unknown): string | undefined {
  return typeof value === "string" && MIME_TYPE.test(value) ? value.toLowerCase() : undefined;
}

/** Whether content of this type is shown as text rather than base64. */
export function isTextual(mimeType: string): boolean {
  const base = mimeType.split(";")[0]?.trim() ?? "";
  return (
    base.startsWith("text/") ||
    base === "application/json" ||
    base.endsWith("+json") ||
    base === "application/xml" ||
    base.endsWith("+xml") ||
    base === "application/javascript" ||
    base === "application/yaml"
  );
}
