import { createHash } from "node:crypto";
import { type Skill, SkillsExtension } from "@modelcontextprotocol/server/ext/skills";
import type { SkillPackage, WorkspaceGuidance } from "../../sources/guidance.ts";
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
export function createSkillsExtension(guidance: WorkspaceGuidance, serve: Serve): SkillsExtension {
  const packagesOf = ({ workspaceId, principal }: AdmittedCaller, path?: string) =>
    guidance.packages(workspaceId, principal.id, path);
  /** The one package whose SKILL.md is at `uri`, reading that skill's files only. */
  const packageAt = async (caller: AdmittedCaller, uri: string) => {
    const path = SKILL_FILE_URI.exec(uri)?.[1];
    return path === undefined ? undefined : (await packagesOf(caller, path))[0];
  };
  return new SkillsExtension({
    cacheHint: SKILLS_CACHE_HINT,
    // The SDK warns on stderr by default; every entry here is built by toEntry, so a warning
    // would be Atrium's bug and is raised instead of printed.
    strict: true,
    source: {
      list: (_params, ctx) =>
        serve(ctx, async (caller) => ({ skills: (await packagesOf(caller)).map((pkg) => toEntry(pkg)) })),
      get: (uri, ctx) =>
        serve(ctx, async (caller) => {
          const found = await packageAt(caller, uri);
          return found === undefined ? undefined : toEntry(found);
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

// skill://<scope>/<name>/SKILL.md: the entry URI of one skill.
const SKILL_FILE_URI = /^skill:\/\/([^/]+\/[^/]+)\/SKILL\.md$/;

function skillFileUri(pkg: SkillPackage): string {
  return `skill://${pkg.path}/SKILL.md`;
}

/**
 * Built here rather than with the SDK's skillEntry(), which re-parses SKILL.md and refuses
 * Atrium's nested `metadata.atrium` block (adr/0012): the standard's frontmatter map is strings
 * only. Name and description are already parsed; each file's digest is over its exact bytes.
 */
function toEntry(pkg: SkillPackage): Skill {
  const resources = Object.entries(pkg.files)
    .map(([file, bytes]) => ({
      uri: `skill://${pkg.path}/${file}`,
      digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
      size: bytes.byteLength,
    }))
    .sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  return { uri: skillFileUri(pkg), frontmatter: { name: pkg.name, description: pkg.description }, resources };
}
