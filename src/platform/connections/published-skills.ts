import type { Logger } from "../../log.ts";
import type { PublishedSkill, PublishedSkillList } from "../app.ts";
import type { DamagedConnections } from "./connection-view.ts";
import type { ConnectionRecord } from "./model.ts";
import { SkillNameClashes, skillsOf } from "./snapshot-skills.ts";
import type { ConnectionStore } from "./store.ts";

/**
 * What a workspace's connections publish as server-scope skills, each from its current snapshot:
 * its server's instructions and the skills it offers, pinned with the snapshot like its tools; a
 * skill whose name another also maps to is left out and listed as a problem (SkillNameClashes).
 */
export class PublishedConnectionSkills {
  /** A snapshot's skills as published, per (workspace, connection, snapshot version): snapshots never change. */
  private readonly bySnapshot = new Map<string, PublishedSkill[]>();
  private readonly clashes: SkillNameClashes;

  constructor(
    private readonly store: ConnectionStore,
    /** The connections service's own, so a damaged file is logged once, whichever look meets it. */
    private readonly damaged: DamagedConnections,
    log: Logger,
    /**
     * Platform app names. A connection bearing one publishes nothing: its instructions would be
     * bound to `<name>__*`, the app's tools, and shown in their descriptions (adr/0128).
     */
    private readonly appNames: readonly string[],
  ) {
    this.clashes = new SkillNameClashes(log);
  }

  async list(workspaceId: string): Promise<PublishedSkillList> {
    const records = (await this.store.list(workspaceId)).filter(
      (record) => record.snapshotVersion > 0 && !this.appNames.includes(record.name),
    );
    const byName = new Map(records.map((record) => [record.name, record]));
    const skills = await this.damaged.readEach([...byName.keys()], async (name) => {
      const record = byName.get(name) as ConnectionRecord;
      const key = `${workspaceId}/${record.name}/${record.snapshotVersion}`;
      let published = this.bySnapshot.get(key);
      if (!published) {
        const snapshot = await this.store.snapshot(workspaceId, record.name, record.snapshotVersion);
        published = skillsOf(record.name, snapshot);
        this.bySnapshot.set(key, published);
      }
      return { connection: name, skills: published };
    });
    return this.clashes.apart(workspaceId, skills);
  }
}
