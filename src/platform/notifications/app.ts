import type { PlatformApp } from "../app.ts";
import { type NotificationSettings, notificationsConfig } from "./config.ts";
import { HELD_RETRY_EVERY_MS, HeldPosts } from "./held-posts.ts";
import { Inbox } from "./inbox.ts";
import { titleNaming } from "./model.ts";
import { notificationRoutes } from "./routes.ts";
import { createNotificationsTools } from "./server.ts";
import { taskRunNotice } from "./task-runs.ts";

const RETENTION_EVERY_MS = 60 * 60 * 1000;
/** The source stamped on what the runtime records about membership itself. */
export const WORKSPACE_SOURCE = "workspace";
/** The source stamped on what the runtime records for the connections app. */
export const CONNECTIONS_SOURCE = "connections";
/** The source stamped on what the runtime records for the tasks app. */
export const TASKS_SOURCE = "tasks";

export const notificationsApp: PlatformApp<NotificationSettings> = {
  name: "notifications",
  config: notificationsConfig,
  start({ settings, storage, events, clock, scheduler, workspaces, log }) {
    const inbox = new Inbox(storage, settings, events, clock);
    // What the runtime posts on its own is held while the disk is full, never dropped at once.
    const runtime = new HeldPosts(inbox, log);
    // A producer: an org admin deactivating someone tells each workspace they belonged to.
    events.subscribe({ types: ["member.deactivated"] }, async (event) => {
      // The display name is the identity provider's, unchecked: cleaned and cut to fit a title.
      const title = titleNaming(
        event.name,
        (who) => `${who} was deactivated by an org admin`,
        event.principalId,
      );
      await runtime.post(event.workspaceId, WORKSPACE_SOURCE, {
        title,
        body: "They can no longer reach this workspace. Reassign or review what they owned here.",
        severity: "warning",
        data: { principalId: event.principalId },
      });
    });
    // Connections: a credential that lapsed needs a human, so the workspace is told — or, for a
    // personal connection (an event with an owner), its owner alone (ADR 0042).
    events.subscribe({ types: ["connection.state_changed"] }, async (event) => {
      if (event.state !== "reauth_required") return;
      const owner = "ownerId" in event ? event.ownerId : undefined;
      await runtime.post(event.workspaceId, CONNECTIONS_SOURCE, {
        title: titleNaming(event.name, (name) => `Connection "${name}" needs to be re-authorized`),
        body: owner
          ? "Its credential was refused by the server. Its tools are refused until you re-authorize it."
          : "Its credential was refused by the server. Its tools are refused until a workspace admin re-authorizes it.",
        severity: "error",
        data: { connection: event.name },
        ...(owner ? { to: owner } : {}),
      });
    });
    // Tasks: a run that did not succeed, or whose output was rejected, tells its owner.
    events.subscribe({ types: ["task.run.finished"] }, async (event) => {
      const draft = taskRunNotice(event.run);
      if (draft) await runtime.post(event.workspaceId, TASKS_SOURCE, draft);
    });
    scheduler.add({
      name: "held notifications",
      schedule: { everyMs: HELD_RETRY_EVERY_MS },
      workspaces: () => runtime.workspaces(),
      run: (workspaceId) => runtime.retry(workspaceId),
    });
    scheduler.add({
      name: "notifications retention",
      schedule: { everyMs: RETENTION_EVERY_MS },
      workspaces: () => workspaces.ids(),
      run: async (workspaceId) => {
        const removed = await inbox.prune(workspaceId);
        if (removed > 0) log.info({ workspaceId, removed }, "notifications past retention removed");
      },
    });
    // No stop of its own: every post is an event subscriber's work, which a graceful stop and the
    // close of a failed boot wait for once the apps' stops have returned (EventBus.settled(), ADR
    // 0093). Waiting here for the posts under way as the stop began missed those the other apps'
    // stops announced (tasks-stop-notice.test.ts, boot-failed-close.test.ts).
    return {
      tools: createNotificationsTools(inbox),
      workspaceRoutes: notificationRoutes(inbox),
      leftovers: inbox,
    };
  },
};
