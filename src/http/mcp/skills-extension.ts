import {
  type Skill,
  SkillCatalogError,
  SkillsExtension,
  skillEntry,
} from "@modelcontextprotocol/server/ext/skills";
import type { Logger } from "../../log.ts";
import { digestOf, type SkillPackage, type WorkspaceGuidance } from "../../sources/guidance.ts";
import { skillPathOf, skillUri } from "../../sources/skill-uri.ts";
import type { AdmittedCaller, Serve } from "./front-server.ts";

/** The resource template the extension serves every skill file under. */
export const SKILL_URI_TEMPLATE = "skill://{+path}";

/**
 * How long a client may reuse `server/discover` and skills answers. They differ per caller and
 * per workspace (`private`), and a skill edit should reach a client within half a minute.
 */
export const SKILLS_CACHE_HINT = { ttlMs: 30_000, cacheScope: "private" } as const;

/**
 * The Skills Extension (`skills/list`, `skills/get`, SHA-256 digests) over the skills Atrium
 * resolves for each caller. Its `skill://` resource template also keeps serving today's resources
 * — `skill://<scope>/<name>` for the guidance and one URI per bundled file — to clients that do
 * not negotiate the extension.
 */
export function createSkillsExtension(
  guidance: WorkspaceGuidance,
  serve: Serve,
  log: Logger,
): SkillsExtension {
  /** The one package whose SKILL.md is at `uri`, with its files' bytes, reading that skill's files only. */
  const packageAt = async ({ workspaceId, principal }: AdmittedCaller, uri: string) => {
    const path = SKILL_FILE_PATH.exec(skillPathOf(uri) ?? "")?.[1];
    return path === undefined ? undefined : guidance.packageFiles(workspaceId, principal.id, path);
  };
  const refused = (skill: string, problem: string) => log.warn({ skill, problem }, "skill entry refused");
  return new SkillsExtension({
    cacheHint: SKILLS_CACHE_HINT,
    // An entry the SDK refuses is left out of skills/list and logged, never the whole list
    // failed: one skill folder holding an odd file must not hide every skill from every caller.
    // toEntry builds only valid entries; this is for the case it ever does not (the SDK's own
    // default would print the warning to stderr instead of the log).
    strict: false,
    onWarning: ({ path, message }) => refused(path, message),
    source: {
      // Each file's digest as the guidance keeps it: a file is read and hashed only when it is
      // not the file it was (adr/0160).
      list: (_params, ctx) =>
        serve(ctx, async ({ workspaceId, principal }) => ({
          skills: (await guidance.packages(workspaceId, principal.id)).map((pkg) => toEntry(pkg)),
        })),
      // skills/get would answer an entry it refuses with its own words in a -32603; one it would
      // leave out of skills/list is not served here either (the SDK's skillEntry() checks it).
      get: (uri, ctx) =>
        serve(ctx, async (caller) => {
          const found = await packageAt(caller, uri);
          if (found === undefined) return undefined;
          try {
            await skillEntry(found.path, found.files);
          } catch (error) {
            if (!(error instanceof SkillCatalogError)) throw error;
            refused(uri, error.message);
            return undefined;
          }
          return toEntry({ ...found, files: mapValues(found.files, digestOf) });
        }),
      read: (uri, ctx) =>
        serve(ctx, async (caller) => {
          const contents = await guidance.readResource(caller.workspaceId, caller.principal.id, uri);
          if (contents !== undefined) {
            return "text" in contents
              ? { text: contents.text, mimeType: contents.mimeType }
              : { bytes: Buffer.from(contents.blob, "base64"), mimeType: contents.mimeType };
          }
          const bytes = (await packageAt(caller, uri))?.files["SKILL.md"];
          // SKILL.md is UTF-8 text by the Agent Skills standard (skill-dirs.ts parses it as such).
          return bytes === undefined
            ? undefined
            : { text: new TextDecoder().decode(bytes), mimeType: "text/markdown" };
        }),
      listResources: (ctx) =>
        serve(ctx, ({ workspaceId, principal }) => guidance.listResources(workspaceId, principal.id)),
    },
  });
}

// <scope>/<name>/SKILL.md: the path of one skill's entry URI.
const SKILL_FILE_PATH = /^([^/]+\/[^/]+)\/SKILL\.md$/;

/**
 * Built here rather than with the SDK's skillEntry(), which parses SKILL.md again: name and
 * description are already parsed. Each file's digest is over its exact bytes, and its URI is
 * percent-encoded as every `skill://` URI Atrium lists (sources/skill-uri.ts).
 */
function toEntry(pkg: SkillPackage): Skill {
  const resources = Object.entries(pkg.files)
    .map(([file, { sha256, size }]) => ({
      uri: skillUri(`${pkg.path}/${file}`),
      digest: `sha256:${sha256}`,
      size,
    }))
    .sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  return {
    uri: skillUri(`${pkg.path}/SKILL.md`),
    frontmatter: { name: pkg.name, description: pkg.description },
    resources,
  };
}

function mapValues<A, B>(record: Record<string, A>, f: (value: A) => B): Record<string, B> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]));
}
