import type { CallToolResult } from "@modelcontextprotocol/server";
import * as z from "zod";
import { joinToolName } from "../../sources/tool-names.ts";
import { AppTools } from "../app-tools.ts";
import { boundedArray, platformInput } from "../platform-tool.ts";
import type { CallerConnections } from "./caller-connections.ts";
import { registerGrantTools } from "./grant-tools.ts";
import type { Grants } from "./grants.ts";
import { MAX_SCOPES } from "./model.ts";

const nameInput = z.string().describe("The connection's name: the <source> of its tools.");

/** What connections__add takes; `POST …/connections` takes the same body, refused alike (ADR 0095). */
export const addInput = platformInput({
  name: nameInput,
  url: z.string().describe("The server's MCP endpoint, an https URL."),
  auth: z
    .strictObject({
      kind: z.enum(["none", "static", "query", "oauth"]),
      header: z.string().optional(),
      param: z.string().optional(),
      value: z.string().optional(),
      scopes: boundedArray(z.string(), MAX_SCOPES).optional(),
    })
    .optional()
    .describe("How Atrium authenticates to the server; none when absent."),
  personal: z
    .boolean()
    .optional()
    .describe(
      `true: your own connection, which any member may add, served to you alone as ${joinToolName("my_<name>", "<tool>")} (in a workspace with other members, once an admin grants it).`,
    ),
});

const authorizeFields = {
  scopes: boundedArray(z.string(), MAX_SCOPES)
    .optional()
    .describe("The OAuth scopes to ask for; the connection's own when absent."),
};

/** `POST …/connections/:name/oauth/start`'s body: connections__authorize's arguments but the name, in the path. */
export const authorizeBody = platformInput(authorizeFields);

function json(value: unknown, text: string): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: value as Record<string, unknown> };
}

/** The connections app's tools, one table for every workspace (each call brings its workspace). Managing takes the workspace admin role. */
export function createConnectionsTools(connections: CallerConnections, grants: Grants): AppTools {
  const tools = new AppTools("atrium-connections");

  tools.registerTool(
    "list",
    {
      description: "List this workspace's connections to remote MCP servers: name, URL, state and snapshot.",
      inputSchema: platformInput({}),
      annotations: { title: "List connections", readOnlyHint: true },
    },
    async (caller) => {
      const list = await connections.list(caller.workspaceId, caller.principalId);
      const lines = list.map(
        (c) =>
          `${c.name}  ${c.state}  ${c.url}  ${c.snapshot ? `snapshot ${c.snapshot.version} (${c.snapshot.tools.length} tools)` : "no snapshot yet"}`,
      );
      return json({ connections: list }, lines.length > 0 ? lines.join("\n") : "No connections here yet.");
    },
  );

  tools.registerTool(
    "add",
    {
      description:
        "Connect a remote MCP server to this workspace (workspace admins; with personal: true, your own, any member): Atrium connects, photographs its tools as snapshot 1, " +
        `and serves them as ${joinToolName("<name>", "<tool>")}. ` +
        'auth is {"kind":"none"}, {"kind":"static","header","value"} or {"kind":"query","param","value"} (the value is sealed, never shown again, and added to the URL\'s query only when Atrium calls the server; a url whose query carries a credential is refused) ' +
        'or {"kind":"oauth","scopes"?}: then the connection waits in pending_auth and the answer\'s go_url is for a workspace admin (for a personal one, you alone) to open in a browser.',
      inputSchema: addInput,
      annotations: { title: "Add a connection", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { name: string; url: string; auth?: unknown; personal?: boolean }) => {
      const added = await connections.add(caller.workspaceId, caller.principalId, args);
      if ("go_url" in added) {
        return json(
          added,
          `"${added.connection.name}" waits for authorization: ${"personal" in added.connection ? "you (its owner, and nobody else) open" : "a workspace admin opens"} ${added.go_url} in a browser before ${added.expiresAt}.`,
        );
      }
      return json(
        added,
        `Connected "${added.name}": snapshot ${added.snapshot?.version} with ${added.snapshot?.tools.length} tools.`,
      );
    },
  );

  tools.registerTool(
    "authorize",
    {
      description:
        "Start a re-authorization of an OAuth connection (workspace admins; a my_ one, its owner alone): answers a go_url for that person to open in a browser; " +
        "the new tokens replace the old ones only if no other authorization of the connection completed first.",
      inputSchema: platformInput({ name: nameInput, ...authorizeFields }),
      annotations: { title: "Authorize a connection", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { name: string; scopes?: string[] }) => {
      const started = await connections.startAuthorization(
        caller.workspaceId,
        caller.principalId,
        args.name,
        {
          ...(args.scopes ? { scopes: args.scopes } : {}),
        },
      );
      return json(
        started,
        `Open ${started.go_url} in a browser before ${started.expiresAt} to authorize "${args.name}".`,
      );
    },
  );

  tools.registerTool(
    "remove",
    {
      description: "Remove a connection (workspace admins): its tools go away; its audit history is kept.",
      inputSchema: platformInput({ name: nameInput }),
      annotations: { title: "Remove a connection", readOnlyHint: false, destructiveHint: true },
    },
    async (caller, args: { name: string }) => {
      await connections.remove(caller.workspaceId, caller.principalId, args.name);
      return json({ removed: args.name }, `Removed "${args.name}".`);
    },
  );

  for (const [tool, disabled] of [
    ["disable", true],
    ["enable", false],
  ] as const) {
    tools.registerTool(
      tool,
      {
        description: disabled
          ? "Take a connection out of service (workspace admins): its tools are not served and it is not checked; nothing is deleted."
          : "Put a disabled connection back in service (workspace admins), serving its current snapshot.",
        inputSchema: platformInput({ name: nameInput }),
        annotations: {
          title: `${disabled ? "Disable" : "Enable"} a connection`,
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: true,
        },
      },
      async (caller, args: { name: string }) => {
        const view = await connections.setDisabled(
          caller.workspaceId,
          caller.principalId,
          args.name,
          disabled,
        );
        return json(view, `"${view.name}" is ${view.state}.`);
      },
    );
  }

  tools.registerTool(
    "status",
    {
      description:
        "Show one connection: state, authorization generation, snapshot version and digest, and each health loop's last look.",
      inputSchema: platformInput({ name: nameInput }),
      annotations: { title: "Connection status", readOnlyHint: true },
    },
    async (caller, args: { name: string }) => {
      const view = await connections.view(caller.workspaceId, caller.principalId, args.name);
      return json(view, JSON.stringify(view));
    },
  );

  tools.registerTool(
    "refresh",
    {
      description:
        "Photograph a connection's tools again as its next snapshot (workspace admins), after reviewing what changed upstream; answers the tools added, removed and changed.",
      inputSchema: platformInput({ name: nameInput }),
      annotations: { title: "Refresh a connection's tools", readOnlyHint: false, destructiveHint: false },
    },
    async (caller, args: { name: string }) => {
      const { connection, changes } = await connections.refresh(
        caller.workspaceId,
        caller.principalId,
        args.name,
      );
      return json(
        { connection, changes },
        `"${args.name}" is now at snapshot ${connection.snapshot?.version}: ${JSON.stringify(changes)}`,
      );
    },
  );

  tools.registerTool(
    "snapshots",
    {
      description:
        "List a connection's snapshot versions, newest first; with from and to, what changed between two versions.",
      inputSchema: platformInput({
        name: nameInput,
        from: z.number().int().min(1).optional().describe("A snapshot version to compare from."),
        to: z.number().int().min(1).optional().describe("A snapshot version to compare to."),
      }),
      annotations: { title: "Connection snapshots", readOnlyHint: true },
    },
    async (caller, args: { name: string; from?: number; to?: number }) => {
      if (args.from !== undefined && args.to !== undefined) {
        const diff = await connections.diff(
          caller.workspaceId,
          caller.principalId,
          args.name,
          args.from,
          args.to,
        );
        return json(diff, JSON.stringify(diff));
      }
      const snapshots = await connections.snapshots(caller.workspaceId, caller.principalId, args.name);
      return json(
        { snapshots },
        snapshots.map((s) => `${s.version}  ${s.takenAt}  ${s.toolCount} tools  ${s.digest}`).join("\n"),
      );
    },
  );

  registerGrantTools(tools, grants);
  return tools;
}
