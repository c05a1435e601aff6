import type { Resource, Tool } from "@modelcontextprotocol/sdk/types.js";
import { joinToolName, splitToolName } from "../../sources/tool-names.ts";
import type { Skill } from "./model.ts";
import type { SkillService } from "./service.ts";

export const SKILL_URI_SCHEME = "skill:";

/** What the MCP front asks of skills for one caller in one workspace. */
export interface WorkspaceGuidance {
  instructions(workspaceId: string, principalId: string): Promise<string>;
  annotateTools(workspaceId: string, principalId: string, tools: Tool[]): Promise<Tool[]>;
  listResources(workspaceId: string, principalId: string): Promise<Resource[]>;
  readResource(workspaceId: string, principalId: string, uri: string): Promise<Skill | undefined>;
}

export function skillUri(skill: Skill): string {
  return `skill://${skill.scope}/${skill.name}`;
}

/** Whether a `metadata.atrium.tools` entry (a name or `source__*`) covers a namespaced tool. */
export function bindsTool(pattern: string, toolName: string): boolean {
  const wanted = splitToolName(pattern);
  const actual = splitToolName(toolName);
  if (!wanted || !actual || wanted.source !== actual.source) return false;
  return wanted.tool === "*" || wanted.tool === actual.tool;
}

export function createWorkspaceGuidance(skills: SkillService): WorkspaceGuidance {
  const readTool = joinToolName("skills", "read");
  return {
    instructions: (workspaceId, principalId) => skills.instructions(workspaceId, principalId),

    // A tool bound to a skill says so in its description, so a client reads the guidance
    // before the tool's first call.
    async annotateTools(workspaceId, principalId, tools) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      const bound = resolved.filter((s) => s.tools.length > 0);
      if (bound.length === 0) return tools;
      return tools.map((tool) => {
        const names = bound.filter((s) => s.tools.some((p) => bindsTool(p, tool.name))).map((s) => s.name);
        if (names.length === 0) return tool;
        const note = `Before the first call, read the skill${names.length > 1 ? "s" : ""} ${names
          .map((n) => `"${n}"`)
          .join(", ")} with ${readTool}.`;
        return { ...tool, description: tool.description ? `${tool.description}\n\n${note}` : note };
      });
    },

    async listResources(workspaceId, principalId) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      return resolved.map((s) => ({
        uri: skillUri(s),
        name: s.name,
        description: s.description,
        mimeType: "text/markdown",
      }));
    },

    async readResource(workspaceId, principalId, uri) {
      const { skills: resolved } = await skills.resolve(workspaceId, principalId);
      return resolved.find((s) => skillUri(s) === uri);
    },
  };
}
