import * as z from "zod";
import { InvalidInput } from "../../errors.ts";
import { AppTools } from "../app-tools.ts";
import { boundedArray, pageInput, platformInput } from "../platform-tool.ts";
import { DEFAULT_PAGE_SIZE, type Inbox, MAX_PAGE_SIZE } from "./inbox.ts";
import type { NotificationView } from "./model.ts";

const MAX_ACK_IDS = 100;
const idInput = z.string().describe("The notification id, ntf_ followed by 24 hex digits.");

/** What notifications__ack takes; `POST …/notifications/ack` takes the same body, refused alike (ADR 0095). */
export const ackInput = platformInput({
  ids: boundedArray(idInput, MAX_ACK_IDS, 1).optional().describe(`Up to ${MAX_ACK_IDS} ids.`),
  all: z.boolean().optional().describe("true: acknowledge every notification there is now."),
});

/** The notifications app's tools, one table for every workspace (each call brings its workspace): the caller's view of its inbox. */
export function createNotificationsTools(inbox: Inbox): AppTools {
  const tools = new AppTools("atrium-notifications");

  tools.registerTool(
    "list",
    {
      description:
        "List this workspace's notifications that you can see, newest first, each with whether you have acknowledged it. " +
        "One page at a time: when `nextCursor` is returned, call again with it as `cursor` for older ones.",
      inputSchema: platformInput({
        ...pageInput("Notifications", MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
        unacked: z.boolean().optional().describe("Only the ones you have not acknowledged."),
      }),
      annotations: { title: "List notifications", readOnlyHint: true },
    },
    async (caller, args: { cursor?: string; limit?: number; unacked?: boolean }) => {
      const page = await inbox.page(caller.workspaceId, caller.principalId, args);
      const lines = page.notifications.map(line);
      if (page.nextCursor) lines.push(`Older ones: call this tool again with cursor "${page.nextCursor}".`);
      return {
        content: [{ type: "text", text: lines.length > 0 ? lines.join("\n") : "No notifications." }],
        structuredContent: { ...page },
      };
    },
  );

  tools.registerTool(
    "read",
    {
      description: "Read one notification in full: title, body, severity, source, time and detail.",
      inputSchema: platformInput({ id: idInput }),
      annotations: { title: "Read a notification", readOnlyHint: true },
    },
    async (caller, args: { id: string }) => {
      const entry = await inbox.get(caller.workspaceId, caller.principalId, args.id);
      const text = entry.body === undefined ? line(entry) : `${line(entry)}\n\n${entry.body}`;
      return { content: [{ type: "text", text }], structuredContent: { notification: entry } };
    },
  );

  tools.registerTool(
    "ack",
    {
      description:
        "Acknowledge notifications for yourself (other members still see them as new): the ones named in `ids`, or every one with `all`.",
      inputSchema: ackInput,
      annotations: {
        title: "Acknowledge notifications",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
      },
    },
    async (caller, args: { ids?: string[]; all?: boolean }) => {
      const what = ackRequest(args);
      const { acked } = await inbox.ack(caller.workspaceId, caller.principalId, what, caller.access);
      const text =
        "all" in what
          ? `Acknowledged every notification (${acked} not acknowledged before).`
          : `Acknowledged ${acked} notification(s).`;
      return { content: [{ type: "text", text }], structuredContent: { acked } };
    },
  );

  return tools;
}

/** Exactly one of `ids` and `all: true`, as the tool and the REST route both take it. */
export function ackRequest(args: { ids?: unknown; all?: unknown }): { ids: string[] } | { all: true } {
  const hasIds = args.ids !== undefined;
  if (hasIds === (args.all === true) || (args.all !== undefined && args.all !== true)) {
    throw new InvalidInput('Give either "ids" (a list of notification ids) or "all": true.');
  }
  if (!hasIds) return { all: true };
  const ids = args.ids;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_ACK_IDS ||
    !ids.every((id) => typeof id === "string")
  ) {
    throw new InvalidInput(`"ids" is a list of 1 to ${MAX_ACK_IDS} notification ids.`);
  }
  return { ids };
}

function line(entry: NotificationView): string {
  return `${entry.id}  #${entry.seq}  ${entry.receivedAt}  [${entry.severity}, ${entry.source}${entry.acked ? ", acked" : ""}]  ${entry.title}`;
}
