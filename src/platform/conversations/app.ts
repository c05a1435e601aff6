import { randomBytes } from "node:crypto";
import { joinToolName } from "../../sources/tool-names.ts";
import type { PlatformApp } from "../app.ts";
import { type ConversationSettings, conversationsConfig } from "./config.ts";
import { ConversationIndexes } from "./conversation-indexes.ts";
import { conversationRoutes, conversationWorkspaceRoutes } from "./routes.ts";
import { createConversationsTools } from "./server.ts";
import { ConversationStore } from "./store.ts";

export const conversationsApp: PlatformApp<ConversationSettings> = {
  name: "conversations",
  config: conversationsConfig,
  start({ settings, storage, events, clock, timers, workspaces, dispatch, log }) {
    const indexes = new ConversationIndexes(storage, timers, log, clock);
    // A file reference is checked by asking the files app, as the caller, through the one
    // dispatch: the same answer files__info gives them, so nobody can point at another's file.
    const isOwnFile = async (workspaceId: string, ownerId: string, fileId: string): Promise<boolean> => {
      const requestId = `conversations-${randomBytes(6).toString("hex")}`;
      const result = await dispatch.call(
        { principalId: ownerId, workspaceId },
        joinToolName("files", "info"),
        { id: fileId },
        { requestId },
      );
      return result.isError !== true;
    };
    const store = new ConversationStore(storage, settings, indexes, events, clock, isOwnFile);
    return {
      tools: createConversationsTools(store),
      workspaceRoutes: conversationWorkspaceRoutes(store),
      routes: conversationRoutes(store, workspaces),
      leftovers: store,
      stop: () => indexes.stop(),
    };
  },
};
