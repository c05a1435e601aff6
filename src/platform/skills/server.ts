import * as z from "zod";
import { toolError } from "../../sources/router.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import { AppTools } from "../app-tools.ts";
import { platformInput } from "../platform-tool.ts";
import type { SkillService } from "./service.ts";
import { bodyOf } from "./skill-body.ts";
import { skillView } from "./view.ts";
import { registerSkillWriteTools } from "./write-tools.ts";
import type { SkillWriter } from "./writer.ts";

/** The skills app's tools, one table for every workspace (each call brings its workspace): list and read the resolved skills. */
const LIST_TOOL = joinToolName("skills", "list");
const READ_TOOL = joinToolName("skills", "read");

export function createSkillsTools(skills: SkillService, writer: SkillWriter): AppTools {
  const tools = new AppTools("atrium-skills");

  tools.registerTool(
    "list",
    {
      description:
        "List the skills you can use in this workspace: name, description, scope, provenance and channel " +
        `(always: already in your instructions; dynamic: read it with ${READ_TOOL}). Files that could not be read are listed as problems.`,
      inputSchema: platformInput({}),
      annotations: { title: "List skills", readOnlyHint: true },
    },
    async (caller) => {
      const { skills: resolved, problems } = await skills.resolve(caller.workspaceId, caller.principalId);
      const list = resolved.map(skillView);
      const lines = list.map(
        (s) => `${s.name} [${s.scope}, ${s.provenance}, ${s.channel}]: ${s.description}`,
      );
      for (const p of problems) lines.push(`problem: ${p.scope}/${p.name}: ${p.message}`);
      return {
        content: [{ type: "text", text: lines.length > 0 ? lines.join("\n") : "No skills here yet." }],
        structuredContent: { skills: list, problems },
      };
    },
  );

  tools.registerTool(
    "read",
    {
      description: "Read a skill's full guidance by name, as resolved for you in this workspace.",
      inputSchema: platformInput({
        name: z.string().describe(`The skill's name, as ${LIST_TOOL} shows it.`),
      }),
      annotations: { title: "Read a skill", readOnlyHint: true },
    },
    async (caller, { name }: { name: string }) => {
      const { skills: resolved } = await skills.resolve(caller.workspaceId, caller.principalId);
      const skill = resolved.find((s) => s.name === name);
      if (!skill) return toolError(`No skill named "${name}" here; list them with ${LIST_TOOL}.`);
      const body = await bodyOf(skill);
      return {
        content: [{ type: "text", text: body }],
        structuredContent: { ...skillView(skill), body },
      };
    },
  );

  registerSkillWriteTools(tools, writer);
  return tools;
}
