const SCHEME = "skill://";

/**
 * `skill://<path>`, `path` being `<scope>/<name>` and, for a bundled file, its path in the skill's
 * folder. Each segment is percent-encoded, so a file named `faq?.md` or `my notes.md` is a URI
 * that names it (`faq%3F.md`, `my%20notes.md`) rather than one with a query, or one a URL parser
 * spells differently from the listing. Every `skill://` URI Atrium lists is built here.
 */
export function skillUri(path: string): string {
  return SCHEME + path.split("/").map(encodeURIComponent).join("/");
}

/**
 * The path a `skill://` URI names, each segment decoded, however the client spelled it (`my
 * notes.md` or `my%20notes.md`); `undefined` for any other URI, a query or a fragment (a file's
 * `?` or `#` is always encoded), a broken escape, or an encoded `/` (a segment is one name).
 */
export function skillPathOf(uri: string): string | undefined {
  if (!uri.startsWith(SCHEME) || uri.includes("?") || uri.includes("#")) return undefined;
  const segments: string[] = [];
  for (const segment of uri.slice(SCHEME.length).split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return undefined;
    }
    if (decoded.includes("/")) return undefined;
    segments.push(decoded);
  }
  return segments.join("/");
}
