import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { toolError } from "../../sources/router.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import type { AppTools, PlatformToolRun } from "../app-tools.ts";
import { boundedArray, platformInput } from "../platform-tool.ts";
import { atriumMetadataSchema } from "./metadata-schema.ts";
import type { LoadingChannel, Skill } from "./model.ts";
import { type SkillUpdate, type SkillWriter, WRITABLE_SCOPES, type WriteTarget } from "./writer.ts";

const scopeInput = z
  .enum(WRITABLE_SCOPES as [string, ...string[]])
  .optional()
  .describe("workspace (admins only; everyone here sees it) or user (only you). Default workspace.");
const nameInput = z.string().describe("The skill's name: lowercase letters, digits and single hyphens.");
const loadingInput = z
  .enum(["always", "dynamic"])
  .optional()
  .describe("always: in every client's instructions; dynamic: listed in the catalog, read on demand.");
// At most what metadata.atrium takes, refused by its length before any item is read (adr/0157).
const toolsInput = boundedArray(z.string(), atriumMetadataSchema.properties.tools.maxItems)
  .optional()
  .describe(`Tools this guidance is for: names or ${joinToolName("source", "*")} patterns.`);

/** What skills__create takes; `POST …/skills` takes the same body, refused alike (ADR 0095). */
export const createInput = platformInput({
  scope: scopeInput,
  name: nameInput,
  description: z.string().describe("One line saying when the skill applies."),
  body: z.string().describe("The guidance, in Markdown."),
  loading: loadingInput,
  tools: toolsInput,
});

const updateFields = {
  intent: z.enum(["replace_body", "patch_metadata"]),
  body: z.string().optional(),
  description: z.string().optional(),
  loading: loadingInput,
  tools: toolsInput,
};

/**
 * `PATCH …/skills/:name`'s body: skills__update's arguments but the name, which is the path's; a
 * `name` in the body is refused, as no update renames a skill.
 */
export const updateBody = platformInput({ scope: scopeInput, ...updateFields });

/** The arguments the write tools share; each tool's schema says which it requires. */
interface SkillArgs {
  scope?: string;
  name: string;
  description?: string;
  body?: string;
  loading?: LoadingChannel;
  tools?: string[];
}

/** skills__create, __update, __delete, __history: the write side of the skills app. */
export function registerSkillWriteTools(tools: AppTools, skillWriter: SkillWriter): void {
  // The scope argument picks the target; anything but "user" is the workspace (the schema allows only these two).
  const run =
    <A extends { scope?: string }>(
      work: (target: WriteTarget, args: A) => Promise<CallToolResult>,
    ): PlatformToolRun<A> =>
    (caller, args) =>
      work(
        {
          scope: args.scope === "user" ? "user" : "workspace",
          workspaceId: caller.workspaceId,
          principalId: caller.principalId,
          access: caller.access,
        },
        args,
      );

  tools.registerTool(
    "create",
    {
      description: "Create a skill: guidance every MCP client of this workspace (or only you) will see.",
      inputSchema: createInput,
      annotations: { title: "Create a skill", readOnlyHint: false, destructiveHint: false },
    },
    run(async (target, args: SkillArgs & { description: string; body: string }) =>
      saved(
        await skillWriter.create(target, args.name, {
          description: args.description,
          body: args.body,
          loading: args.loading,
          tools: args.tools,
          provenance: "chat",
        }),
        "Created",
      ),
    ),
  );

  tools.registerTool(
    "update",
    {
      description:
        "Change a skill, stating the intent: replace_body (give body) or patch_metadata (give any of description, loading, tools).",
      inputSchema: platformInput({ scope: scopeInput, name: nameInput, ...updateFields }),
      annotations: { title: "Update a skill", readOnlyHint: false, destructiveHint: false },
    },
    run(async (target, args: SkillArgs & { intent: SkillUpdate["intent"] }) => {
      const update = toUpdate(args);
      if (typeof update === "string") return toolError(update);
      return saved(await skillWriter.update(target, args.name, update), "Updated");
    }),
  );

  tools.registerTool(
    "delete",
    {
      description: "Delete a skill and its saved versions.",
      inputSchema: platformInput({ scope: scopeInput, name: nameInput }),
      annotations: { title: "Delete a skill", readOnlyHint: false, destructiveHint: true },
    },
    run(async (target, args: { scope?: string; name: string }) => {
      await skillWriter.delete(target, args.name);
      return { content: [{ type: "text", text: `Deleted ${target.scope} skill ${args.name}.` }] };
    }),
  );

  tools.registerTool(
    "history",
    {
      description: "List a skill's saved versions, or read one by giving version.",
      inputSchema: platformInput({
        scope: scopeInput,
        name: nameInput,
        version: z.number().int().positive().optional(),
      }),
      annotations: { title: "Skill history", readOnlyHint: true },
    },
    run(async (target, args: { scope?: string; name: string; version?: number }) => {
      if (args.version !== undefined) {
        const shown = await skillWriter.version(target, args.name, args.version);
        const { text, spelledOutFromLine } = shown;
        if (spelledOutFromLine === undefined)
          return { content: [{ type: "text", text }], structuredContent: { version: args.version, text } };
        // Said first, so neither a person nor a model takes the written-out characters for the file's.
        const note = `Version ${args.version} of ${args.name} holds characters a reader cannot see (invisible, bidirectional, tag or control characters), first on line ${spelledOutFromLine} of its file. Each is written out below as <U+…>, so this is not the file's text. A skill may no longer hold them: to use this version, give its visible text to ${joinToolName("skills", "update")} with replace_body.`;
        return {
          content: [
            { type: "text", text: note },
            { type: "text", text },
          ],
          structuredContent: { version: args.version, text, spelledOutFromLine },
        };
      }
      const versions = await skillWriter.history(target, args.name);
      return {
        content: [{ type: "text", text: versions.map((v) => `v${v.version} ${v.savedAt}`).join("\n") }],
        structuredContent: { versions },
      };
    }),
  );
}

/** Turns tool arguments into one stated intent, or says what is missing or mixed. */
export function toUpdate(args: {
  intent: string;
  body?: string | undefined;
  description?: string | undefined;
  loading?: "always" | "dynamic" | undefined;
  tools?: string[] | undefined;
}): SkillUpdate | string {
  const patches = args.description !== undefined || args.loading !== undefined || args.tools !== undefined;
  if (args.intent === "replace_body") {
    if (args.body === undefined) return "replace_body needs `body`.";
    if (patches)
      return "replace_body changes only the body; patch settings with a separate patch_metadata update.";
    return { intent: "replace_body", body: args.body };
  }
  if (args.intent === "patch_metadata") {
    if (args.body !== undefined) return "patch_metadata does not take `body`; use replace_body.";
    if (!patches) return "patch_metadata needs at least one of description, loading, tools.";
    return {
      intent: "patch_metadata",
      description: args.description,
      loading: args.loading,
      tools: args.tools,
    };
  }
  return 'intent must be "replace_body" or "patch_metadata".';
}

function saved(skill: Skill, verb: string): CallToolResult {
  return {
    content: [{ type: "text", text: `${verb} ${skill.scope} skill ${skill.name}.` }],
    structuredContent: {
      name: skill.name,
      description: skill.description,
      scope: skill.scope,
      provenance: skill.provenance,
      loading: skill.loading,
      tools: skill.tools,
    },
  };
}
