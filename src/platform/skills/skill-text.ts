import { isDeepStrictEqual } from "node:util";
import matter from "gray-matter";
import { type Document, isMap, parseDocument, Scalar, visit } from "yaml";
import type { AtriumMetadata } from "./metadata-schema.ts";
import { bodyText } from "./model.ts";
import { frontMatterOf } from "./parse.ts";
import type { SkillDraft, SkillUpdate } from "./writer.ts";

/** A new skill's SKILL.md: its name, description and the `metadata.atrium` settings it was given. */
export function renderSkill(name: string, draft: SkillDraft): string {
  const atrium: AtriumMetadata = {};
  if (draft.loading) atrium.loading = draft.loading;
  if (draft.tools && draft.tools.length > 0) atrium.tools = draft.tools;
  if (draft.provenance) atrium.provenance = draft.provenance;
  const data: Record<string, unknown> = { name, description: draft.description };
  if (Object.keys(atrium).length > 0) data.metadata = { atrium };
  return frontMatterThen(data, `${bodyText(draft.body)}\n`);
}

/**
 * An existing SKILL.md with one update applied and nothing else changed: a skill moves between
 * Atrium and other clients unchanged (adr/0012), so the standard fields (`license`,
 * `allowed-tools`, `compatibility`), the rest of `metadata` and any key Atrium does not know are
 * kept, and no default (`loading`, `provenance`) is written that the file did not hold. A new
 * body keeps the front matter byte for byte. A settings patch edits the YAML document in place,
 * so what it does not change keeps its text — comments, layout, `1.0`, a date, a long integer —
 * and falls back to writing the front matter again (which keeps keys and values, not their text)
 * only for front matter that is not one plain YAML mapping
 * (test/unit/platform/skills/writer-body.test.ts "an update keeps ...").
 */
export function editSkillText(text: string, name: string, update: SkillUpdate): string {
  const { data, content } = frontMatterOf(text);
  const head = text.endsWith(content) ? text.slice(0, text.length - content.length) : undefined;
  if (update.intent === "replace_body") {
    const body = `${bodyText(update.body)}\n`;
    // Kept only when it closes: front matter with no closing `---` runs to the end of the file,
    // and a body written after it would be read back as more front matter.
    if (head !== undefined && CLOSED_HEAD.test(head) && data.name === name) {
      return `${head.endsWith("\n") ? head : `${head}\n`}${body}`;
    }
    return frontMatterThen({ ...data, name }, body);
  }
  const next: Record<string, unknown> = { ...data, name };
  if (update.description !== undefined) next.description = update.description;
  if (update.loading !== undefined || update.tools !== undefined) {
    const metadata = isMapping(data.metadata) ? { ...data.metadata } : {};
    const atrium = isMapping(metadata.atrium) ? { ...metadata.atrium } : {};
    if (update.loading !== undefined) atrium.loading = update.loading;
    // No tools is the absence of the key, as a new skill writes it.
    if (update.tools?.length) atrium.tools = update.tools;
    else if (update.tools !== undefined) delete atrium.tools;
    if (Object.keys(atrium).length > 0) metadata.atrium = atrium;
    else delete metadata.atrium;
    // A mapping the file held stays, even emptied; one made for this patch goes if left empty.
    if (Object.keys(metadata).length > 0 || isMapping(data.metadata)) next.metadata = metadata;
    else delete next.metadata;
  }
  return patchedInPlace(text, name, update, next) ?? frontMatterThen(next, content);
}

/** Plain YAML front matter: its opening line, its source, its closing line. */
const YAML_FRONT_MATTER = /^(---[ \t]*\r?\n)([\s\S]*?\r?\n)?(---[ \t]*(?:\r?\n|$))/;

/**
 * The patch applied to the front matter's YAML document, every other node left as its text; or
 * undefined when the front matter is not one plain YAML mapping, or when the file read back
 * would not hold exactly `expected` (the data the rewrite would write): then the caller writes
 * the front matter again. Values Atrium sets are double-quoted, so the YAML 1.1 reader the
 * skills are parsed with (gray-matter's) never takes a description like `yes` for a boolean.
 */
function patchedInPlace(
  text: string,
  name: string,
  update: Extract<SkillUpdate, { intent: "patch_metadata" }>,
  expected: Record<string, unknown>,
): string | undefined {
  const match = YAML_FRONT_MATTER.exec(text);
  if (!match) return undefined;
  const [whole, open, source = "", close] = match as unknown as [string, string, string | undefined, string];
  const doc = parseDocument(source, { intAsBigInt: true });
  if (doc.errors.length > 0 || !isMap(doc.contents)) return undefined;
  try {
    if (doc.get("name") !== name) doc.set("name", quoted(doc, name));
    if (update.description !== undefined) doc.set("description", quoted(doc, update.description));
    if (update.loading !== undefined)
      doc.setIn(["metadata", "atrium", "loading"], quoted(doc, update.loading));
    if (update.tools?.length) doc.setIn(["metadata", "atrium", "tools"], quoted(doc, update.tools));
    else if (update.tools !== undefined) doc.deleteIn(["metadata", "atrium", "tools"]);
    const atrium = doc.getIn(["metadata", "atrium"]);
    if (isMap(atrium) && atrium.items.length === 0) doc.deleteIn(["metadata", "atrium"]);
  } catch {
    // A path through something that is not a mapping (`metadata: text`): written again instead.
    return undefined;
  }
  const patched = `${open}${String(doc)}${close}${text.slice(whole.length)}`;
  return isDeepStrictEqual(frontMatterOf(patched).data, expected) ? patched : undefined;
}

/** `value` as a node whose strings are all double-quoted. */
function quoted(doc: Document, value: unknown): unknown {
  const node = doc.createNode(value);
  visit(node, {
    Scalar(_key, scalar) {
      if (typeof scalar.value === "string") scalar.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return node;
}

/** Front matter that ends with its closing delimiter line. */
const CLOSED_HEAD = /\r?\n---[ \t]*(\r?\n)?$/;

// An object, never a string: given a string, gray-matter parses it as a file first, so a body
// starting with `---js` would be evaluated and one starting with `---` would lose its text to
// front matter. The body is data, written after the front matter as it was given.
function frontMatterThen(data: Record<string, unknown>, body: string): string {
  return matter.stringify({ content: body }, data);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
