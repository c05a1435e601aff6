import { dirname, join } from "node:path";
import { InvalidInput } from "../../errors.ts";
import type {
  DescribedTool,
  ResourceContents,
  SkillPackage,
  WorkspaceGuidance,
} from "../../sources/guidance.ts";
import { skillPathOf, skillUri } from "../../sources/skill-uri.ts";
import { joinToolName, splitToolName } from "../../sources/tool-names.ts";
import { spelledOutProse } from "../../text.ts";
import type { Skill, SkillScope } from "./model.ts";
import { lineHidingText } from "./parse.ts";
import type { SkillService } from "./service.ts";
import { bodyOf } from "./skill-body.ts";
import { openSkillFile, SKILL_FILE, SkillFileRefused, scopeFolderAllows } from "./skill-file.ts";

function skillPath(skill: Skill, file?: string): string {
  return `${skill.scope}/${skill.name}${file === undefined ? "" : `/${file}`}`;
}

/** Whether a `metadata.atrium.tools` entry (a name or `source__*`) covers a namespaced tool. */
export function bindsTool(pattern: string, toolName: string): boolean {
  const wanted = splitToolName(pattern);
  const actual = splitToolName(toolName);
  if (!wanted || !actual || wanted.source !== actual.source) return false;
  return wanted.tool === "*" || wanted.tool === actual.tool;
}

const READ_TOOL = joinToolName("skills", "read");

function annotate<T extends DescribedTool>(resolved: readonly Skill[], tools: T[]): T[] {
  const bound = resolved.filter((s) => s.tools.length > 0);
  if (bound.length === 0) return tools;
  return tools.map((tool) => {
    const names = bound.filter((s) => s.tools.some((p) => bindsTool(p, tool.name))).map((s) => s.name);
    if (names.length === 0) return tool;
    const note = `Before the first call, read the skill${names.length > 1 ? "s" : ""} ${names
      .map((n) => `"${n}"`)
      .join(", ")} with ${READ_TOOL}.`;
    return { ...tool, description: tool.description ? `${tool.description}\n\n${note}` : note };
  });
}

export function createWorkspaceGuidance(skills: SkillService): WorkspaceGuidance {
  // Keyed by the tool list object, so a list nobody keeps any more takes its notes with it.
  const annotated = new WeakMap<object, { skills: readonly Skill[]; tools: readonly DescribedTool[] }>();
  return {
    instructions: (workspaceId, principalId) => skills.instructions(workspaceId, principalId),

    // A tool bound to a skill says so in its description, so a client reads the guidance
    // before the tool's first call. The notes are kept while the tool list and the resolved
    // skills are the same objects (both are kept while unchanged: router.ts, service.ts).
    async annotateTools(workspaceId, principalId, tools) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      const kept = annotated.get(tools);
      if (kept?.skills === resolved) return kept.tools as typeof tools;
      const result = annotate(resolved, tools);
      annotated.set(tools, { skills: resolved, tools: result });
      return result;
    },

    async listResources(workspaceId, principalId) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      return resolved.flatMap((s) => [
        { uri: skillUri(skillPath(s)), name: s.name, description: s.description, mimeType: "text/markdown" },
        ...(s.files ?? []).map((file) => ({ uri: skillUri(skillPath(s, file)), name: `${s.name}/${file}` })),
      ]);
    },

    // A bundled file is read only if its exact path was listed for that skill, so a URI can
    // never name a path outside the skill's own folder. The URI is compared decoded, so any
    // spelling of a listed file's name reads it.
    async readResource(workspaceId, principalId, uri) {
      const path = skillPathOf(uri);
      if (path === undefined) return undefined;
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      for (const skill of resolved) {
        if (path === skillPath(skill)) return { uri, mimeType: "text/markdown", text: await bodyOf(skill) };
        const file = skill.files?.find((f) => path === skillPath(skill, f));
        if (file !== undefined && skill.dir !== undefined)
          return readBundled(uri, skill.dir, skill.scope, file);
      }
      return undefined;
    },

    async packages(workspaceId, principalId, path) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      const wanted = path === undefined ? resolved : resolved.filter((s) => `${s.scope}/${s.name}` === path);
      const packages = await Promise.all(wanted.map(toPackage));
      return packages.filter((one): one is SkillPackage => one !== undefined);
    },
  };
}

/**
 * A skill as the Skills Extension publishes it. Its SKILL.md is rendered from the name,
 * description and body — the frontmatter its entry states — rather than served as the file on
 * disk, whose `metadata.atrium` block (ADR 0012) is not the standard's string map: a verifying
 * client (the SDK's SkillsClient) compares the file's frontmatter with the entry and refused
 * Atrium's own skills before. The digest still changes exactly when the name, description or
 * body does; bundled files are served as they are on disk.
 */
async function toPackage(skill: Skill): Promise<SkillPackage | undefined> {
  const known = { path: `${skill.scope}/${skill.name}`, name: skill.name, description: skill.description };
  const body = await bodyOf(skill).catch(() => undefined);
  // Changed since it was listed: left out, as a skill with a file not served is; the next
  // request lists the folder again.
  if (body === undefined) return undefined;
  const rendered = { [SKILL_FILE]: renderSkillFile(skill, body) };
  if (skill.dir === undefined) return { ...known, files: rendered };
  const { dir, scope } = skill;
  const names = skill.files ?? [];
  const contents = await Promise.all(names.map((name) => bundledBytes(dir, scope, name)));
  // A skill one of whose files is not served is left out of the list whole: a package without a
  // file it ships would be a different skill. It costs only itself.
  if (contents.some((content) => typeof content === "string")) return undefined;
  return {
    ...known,
    files: {
      ...rendered,
      ...Object.fromEntries(names.map((name, i) => [name, new Uint8Array(contents[i] as Buffer)])),
    },
  };
}

/** The most a bundled file may hold to be served: every `skills/list` reads each one whole. */
export const MAX_BUNDLED_FILE_BYTES = 8 * 1024 * 1024;

/**
 * A bundled file's bytes, or why it is not served: not a regular file (a FIFO would block a
 * thread of the pool for good; a symlink, swapped in after the listing skipped it, could point
 * anywhere the process can read: adr/0139), or over MAX_BUNDLED_FILE_BYTES (a gigabyte file,
 * read on every list, held its memory and failed the whole list). It is opened as a SKILL.md
 * is (openSkillFile), never blocking or following a link, nor through a folder swapped for one
 * since the listing (its `references/`, the skill's own), nor the scope's folder itself where
 * it may not be a link (a workspace's or a person's `skills/`: scopeFolderAllows). An operator
 * puts such files in place; no member can write one.
 */
async function bundledBytes(folder: string, scope: SkillScope, file: string): Promise<Buffer | string> {
  const allow = scopeFolderAllows(scope);
  const opened = await openSkillFile(join(folder, file), dirname(folder), allow).catch((error: unknown) => {
    if (error instanceof SkillFileRefused) return `it ${error.reason}`;
    throw error;
  });
  if (opened === undefined) return "it is gone";
  if (typeof opened === "string") return opened;
  try {
    const { size } = opened.info;
    if (size > MAX_BUNDLED_FILE_BYTES)
      return `it holds ${size} bytes, over the ${MAX_BUNDLED_FILE_BYTES} a bundled file may`;
    return await opened.handle.readFile();
  } finally {
    await opened.handle.close();
  }
}

function renderSkillFile(skill: Skill, body: string): Uint8Array {
  const frontmatter = `name: ${JSON.stringify(skill.name)}\ndescription: ${JSON.stringify(skill.description)}`;
  return new TextEncoder().encode(`---\n${frontmatter}\n---\n\n${body}`);
}

/**
 * A bundled file as resources/read answers it: its text, or its bytes when it is not UTF-8. Text
 * holding what a reader cannot see (a line hidesText refuses, as a skill's body may not hold) is
 * answered spelled out (`<U+202E>`) after a note saying so, as a saved version is (adr/0132): it
 * reaches the model as a person reading it sees it. skills/get still packages the file's bytes,
 * which its digest covers.
 */
async function readBundled(
  uri: string,
  folder: string,
  scope: SkillScope,
  file: string,
): Promise<ResourceContents> {
  const content = await bundledBytes(folder, scope, file);
  if (typeof content === "string") throw new InvalidInput(`${uri} is not served: ${content}.`);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(content);
  } catch {
    return { uri, mimeType: "application/octet-stream", blob: content.toString("base64") };
  }
  const line = lineHidingText(text);
  if (line === undefined) return { uri, mimeType: "text/plain", text };
  const note = `[${file} holds characters a reader cannot see (invisible, bidirectional, tag or control characters), first on line ${line}. Each is written out below as <U+…>, so this is not the file's text.]`;
  return { uri, mimeType: "text/plain", text: `${note}\n\n${spelledOutProse(text)}` };
}
