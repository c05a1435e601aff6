import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import type { AppTools } from "../app-tools.ts";
import { platformInput } from "../platform-tool.ts";
import type { ConnectionGrant, Grants } from "./grants.ts";

const grantInput = {
  principalId: z.string().describe("The member who holds the grant: their principal id (usr_…)."),
  connection: z.string().describe('Their personal connection as they see it: "my_" and its name.'),
};

/** What connections__grant takes; `POST …/connections/grants` takes the same body, refused alike (ADR 0095). */
export const grantBody = platformInput(grantInput);

function describe(grant: ConnectionGrant): string {
  return `${grant.principalId} may use ${grant.connection} here (granted by ${grant.grantedBy} at ${grant.grantedAt})`;
}

function answer(value: Record<string, unknown>, text: string): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: value };
}

/** The grant tools of the connections app: `grants`, `grant`, `revoke_grant` (ADR 0042). */
export function registerGrantTools(tools: AppTools, grants: Grants): void {
  tools.registerTool(
    "grants",
    {
      description:
        "List the grants that let members' personal connections act in this workspace: an admin sees every grant, a member their own. A grant holds no credential.",
      inputSchema: platformInput({}),
      annotations: { title: "List grants", readOnlyHint: true },
    },
    async (caller) => {
      const list = await grants.list(caller.workspaceId, caller.principalId);
      return answer({ grants: list }, list.length > 0 ? list.map(describe).join("\n") : "No grants here.");
    },
  );

  tools.registerTool(
    "grant",
    {
      description:
        "Let a member's personal connection act in this workspace (workspace admins). Needed where the workspace has other members than its owner.",
      inputSchema: grantBody,
      annotations: {
        title: "Grant a personal connection",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
      },
    },
    async (caller, args: { principalId: string; connection: string }) => {
      const { grant } = await grants.grant(caller.workspaceId, caller.principalId, args);
      return answer({ grant }, describe(grant));
    },
  );

  tools.registerTool(
    "revoke_grant",
    {
      description:
        "Take back a grant (workspace admins): the member's personal connection stops acting here on its next call.",
      inputSchema: platformInput(grantInput),
      annotations: { title: "Revoke a grant", readOnlyHint: false, destructiveHint: true },
    },
    async (caller, args: { principalId: string; connection: string }) => {
      await grants.revoke(caller.workspaceId, caller.principalId, args.principalId, args.connection);
      return answer(
        { revoked: args },
        `Revoked: ${args.principalId} no longer uses ${args.connection} here.`,
      );
    },
  );
}
