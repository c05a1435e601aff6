import type { Clock } from "../../kernel/clock.ts";
import { systemTimers, type Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { IdleCache } from "../../sources/idle-cache.ts";
import type { PublishedSkill, PublishedSkillList } from "../app.ts";
import type { DamagedConnections } from "./connection-view.ts";
import { type ConnectionRecord, isServed } from "./model.ts";
import { SkillNameClashes, skillsOf } from "./snapshot-skills.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * How long a workspace's published skills are kept unused before they are dropped: the idle
 * period of its source registry (IDLE_EVICT_MS in src/server.ts), so the two go together.
 */
export const PUBLISHED_SKILLS_IDLE_MS = 10 * 60 * 1000;

/**
 * One connection's skills as published from the snapshot it is served from, known by the record's
 * id as well as the version: a connection removed and added again under its name starts again at
 * version 1, and a listing that read the removed one's snapshot may keep it after the removal.
 */
interface Kept {
  id: string;
  version: number;
  skills: PublishedSkill[];
}

/** A workspace's kept skills, by connection name. */
interface WorkspaceKept {
  workspaceId: string;
  connections: Map<string, Kept>;
}

/**
 * What a workspace's served connections publish as server-scope skills, each from its current
 * snapshot: its server's instructions and the skills it offers, pinned with the snapshot like its
 * tools; a skill whose name another also maps to is left out and listed as a problem
 * (SkillNameClashes). A connection that is not served (`isServed`: disabled, not yet authorized,
 * or bearing a platform app's name, adr/0128) publishes nothing; a damaged one is left out.
 *
 * Each connection's published skills are kept, the same objects while its snapshot is (the skills
 * app tells by them that nothing changed), for its current snapshot only: a refresh replaces them,
 * and a connection no longer served, or removed, takes them with it. A workspace's are dropped
 * when idle, as its registry is, and its clashes with them (adr/0134;
 * test/unit/platform/connections/published-skills.test.ts).
 */
export class PublishedConnectionSkills {
  private readonly workspaces: IdleCache<WorkspaceKept>;
  private readonly clashes: SkillNameClashes;

  constructor(
    private readonly store: ConnectionStore,
    /** The connections service's own, so a damaged file is logged once, whichever look meets it. */
    private readonly damaged: DamagedConnections,
    log: Logger,
    /** Platform app names: a connection bearing one is not served (isServed). */
    private readonly appNames: readonly string[],
    clock: Clock,
    timers: Timers = systemTimers,
  ) {
    this.clashes = new SkillNameClashes(log);
    this.workspaces = new IdleCache(
      async (workspaceId) => ({ workspaceId, connections: new Map<string, Kept>() }),
      // Its clashes go with it: a workspace with one was otherwise remembered for good.
      async ({ workspaceId }) => this.clashes.forget(workspaceId),
      PUBLISHED_SKILLS_IDLE_MS,
      { clock, timers },
    );
  }

  list(workspaceId: string): Promise<PublishedSkillList> {
    // A workspace with no connection keeps nothing here: most have none, and an entry for each
    // would outlive the workspace's own eviction until this cache's sweep (bench/memory).
    if (this.store.names(workspaceId).length === 0)
      return Promise.resolve(this.clashes.apart(workspaceId, []));
    return this.workspaces.use(workspaceId, async ({ connections: kept }) => {
      const records = (await this.store.list(workspaceId)).filter((record) =>
        isServed(record, this.appNames),
      );
      const byName = new Map(records.map((record) => [record.name, record]));
      for (const name of kept.keys()) if (!byName.has(name)) kept.delete(name);
      const skills = await this.damaged.readEach(
        this.store,
        workspaceId,
        [...byName.keys()],
        async (name) => {
          const record = byName.get(name) as ConnectionRecord;
          let current = kept.get(name);
          if (current?.id !== record.id || current.version !== record.snapshotVersion) {
            const snapshot = await this.store.snapshot(workspaceId, name, record.snapshotVersion);
            current = { id: record.id, version: record.snapshotVersion, skills: skillsOf(name, snapshot) };
            kept.set(name, current);
          }
          return { connection: name, skills: current.skills };
        },
      );
      return this.clashes.apart(workspaceId, skills);
    });
  }

  /** A removed connection's skills go at once, not at the workspace's next listing. */
  async forget(workspaceId: string, name: string): Promise<void> {
    (await this.workspaces.peek(workspaceId))?.connections.delete(name);
  }

  /** How many connections of `workspaceId` have published skills kept now. */
  async kept(workspaceId: string): Promise<number> {
    return (await this.workspaces.peek(workspaceId))?.connections.size ?? 0;
  }

  /** How many workspaces have an entry kept now (none for one without a connection). */
  get workspacesKept(): number {
    return this.workspaces.size;
  }

  /** Drops the workspaces unused for PUBLISHED_SKILLS_IDLE_MS (also done on a timer). */
  sweep(now?: number): Promise<void> {
    return this.workspaces.sweep(now);
  }

  /** A graceful stop: the idle timer ends, and what is kept is dropped. */
  close(): Promise<void> {
    return this.workspaces.close();
  }
}
