import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventBus } from "../../src/kernel/events.ts";
import { createLogger } from "../../src/log.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import { WorkspaceStore } from "../../src/workspace/store.ts";

/** A fresh data root with its workspace store and one workspace, for a store's unit tests. */
export interface TempRoot {
  root: string;
  layout: StorageLayout;
  events: EventBus;
  workspaces: WorkspaceStore;
  /** The id of a workspace `owner` created. */
  ws: string;
  remove(): Promise<void>;
}

export async function openTempRoot(prefix: string, owner: string): Promise<TempRoot> {
  const root = await mkdtemp(join(tmpdir(), `atrium-${prefix}-`));
  const layout = new StorageLayout(root);
  const events = new EventBus(createLogger("silent"));
  const workspaces = new WorkspaceStore(layout, events);
  await workspaces.load();
  const ws = (await workspaces.create("W", owner)).id;
  return { root, layout, events, workspaces, ws, remove: () => rm(root, { recursive: true, force: true }) };
}
