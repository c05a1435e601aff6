import { randomBytes } from "node:crypto";
import { isUnshowable, showsNothing } from "../../text.ts";

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
export const MAX_FILE_NAME_CHARS = 255;
export const DEFAULT_MIME_TYPE = "application/octet-stream";

export function newFileId(): string {
  return `fl_${randomBytes(12).toString("hex")}`;
}

export function isFileId(value: string): boolean {
  return FILE_ID.test(value);
}

/** What checkFileName refuses, in the words a caller is told (store.ts). */
export const FILE_NAME_RULE =
  `A file name is 1 to ${MAX_FILE_NAME_CHARS} characters (Unicode code points), at least one of them ` +
  "visible (not only invisible characters such as U+200B or U+200F), with no control characters " +
  "(C0, DEL, C1, line or paragraph separators, or bidirectional controls such as U+202E) and no half of a surrogate pair. " +
  "Send the file again under such a name.";

/**
 * The bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069),
 * which make "x\u202Etxt.exe" show as "xexe.txt": each changes what the rest looks like. C1
 * controls and the line and paragraph separators, which broke a listing's line in two and let a
 * name show as a second file, are isUnshowable's.
 */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;

/**
 * A file name is a label, never a path; it is refused only when it could not be shown as it is
 * (FILE_NAME_RULE): a name that shows nothing would be listed as a blank line no one can pick out.
 * An invisible character inside visible text is kept (an emoji's joiner, a right-to-left mark).
 * Its length is counted in code points, so 255 emoji fit as 255 letters do.
 */
export function checkFileName(name: unknown): string | undefined {
  if (typeof name !== "string") return undefined;
  const trimmed = name.trim();
  if (
    trimmed.length === 0 ||
    codePointsOver(trimmed, MAX_FILE_NAME_CHARS) ||
    isUnshowable(trimmed) ||
    BIDI_CONTROL.test(trimmed) ||
    showsNothing(trimmed)
  ) {
    return undefined;
  }
  return trimmed;
}

/** Whether `text` holds more than `max` code points (a surrogate pair is one). */
function codePointsOver(text: string, max: number): boolean {
  if (text.length <= max) return false;
  if (text.length > 2 * max) return true;
  let count = 0;
  for (const _ of text) if (++count > max) return true;
  return false;
}

// RFC 9110 §8.3.1 and §5.6: media-type = type "/" subtype *( OWS ";" OWS [ parameter ] ),
// parameter = token "=" ( token / quoted-string ). obs-text (bytes 0x80-0xFF) is refused: it is
// obsolete, and read as Latin-1 by HTTP but as UTF-8 by everything else. A value that passes is
// one Node can send as a header, so a stored type can never break a download
// (test/unit/platform/files/model.test.ts, test/integration/files-mime.test.ts).
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[\\t \\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\t \\x21-\\x7E])*"';
const OWS = "[ \\t]*";
const PARAMETER = `${TOKEN}=(?:${TOKEN}|${QUOTED_STRING})`;
const MEDIA_TYPE = new RegExp(`^(${TOKEN})/(${TOKEN})((?:${OWS};${OWS}(?:${PARAMETER})?)*)$`);
/** RFC 6838 §4.2 caps type and subtype names at 127 characters; parameters get the rest. */
const MAX_MIME_NAME_CHARS = 127;
const MAX_MIME_TYPE_CHARS = 512;

/** The media type with type and subtype lowercased (they are case-insensitive), or undefined if it is not one. */
export function checkMimeType(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > MAX_MIME_TYPE_CHARS) return undefined;
  const match = MEDIA_TYPE.exec(value);
  if (!match) return undefined;
  const [, type = "", subtype = "", parameters = ""] = match;
  if (type.length > MAX_MIME_NAME_CHARS || subtype.length > MAX_MIME_NAME_CHARS) return undefined;
  return `${type.toLowerCase()}/${subtype.toLowerCase()}${parameters}`;
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
