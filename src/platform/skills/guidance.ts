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
import { FileDigests } from "./file-digests.ts";
import type { Skill, SkillScope } from "./model.ts";
import { lineHidingText } from "./parse.ts";
import type { SkillService } from "./service.ts";
import { bodyOf } from "./skill-body.ts";
import { bundledBytes, packageDigests, packageFiles } from "./skill-package.ts";

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

/**
 * The guidance of the skills `skills` resolves. `digests`: the files' digests skills/list keeps
 * (one per process, shared by every workspace: keyed by what is on disk, never by path).
 */
export function createWorkspaceGuidance(
  skills: SkillService,
  digests = new FileDigests(),
): WorkspaceGuidance {
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

    async packages(workspaceId, principalId) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      const packages = await Promise.all(resolved.map((skill) => packageDigests(skill, digests)));
      return packages.filter((one): one is SkillPackage => one !== undefined);
    },

    async packageFiles(workspaceId, principalId, path) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      const skill = resolved.find((s) => `${s.scope}/${s.name}` === path);
      return skill === undefined ? undefined : packageFiles(skill);
    },
  };
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
