import { rename } from "node:fs/promises";
import { join } from "node:path";
import { CorruptJson, readJsonIfExists, syncDir, writeJsonAtomic } from "../../storage/atomic.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { ENTRIES, type EntryName, entryFile, listEntryNames } from "./entry-names.ts";
import type { Notification } from "./model.ts";

/**
 * Written once every entry's name says whom it is for. Inboxes from before names carried the
 * addressee are upgraded when first used, so a name without one means everyone.
 */
const NAMES_MARK = "names.json";

/**
 * Whether a workspace's entry names carry their addressee, and the upgrade that gives them one
 * in an inbox written before they did (ADR 0035). The upgrade and the mark are made under the
 * inbox's lock of the workspace, as a post is.
 */
export class AddresseeNames {
  /** Workspaces whose entry names are known to carry their addressee (NAMES_MARK). */
  private readonly named = new Set<string>();

  constructor(
    private readonly storage: PartitionPaths,
    private readonly readEntry: (workspaceId: string, name: EntryName) => Promise<Notification | undefined>,
  ) {}

  /** Known in this process, without reading the disk. */
  known(workspaceId: string): boolean {
    return this.named.has(workspaceId);
  }

  /**
   * Gives each entry of an inbox written before names carried their addressee the name that
   * says it, then writes NAMES_MARK. An upgrade cut short is finished by the next: a name
   * already carrying an addressee is left, and one that does not is read again.
   */
  async upgrade(workspaceId: string): Promise<void> {
    if (this.named.has(workspaceId)) return;
    const dir = this.storage.dir(workspaceId);
    if (await readJsonIfExists(join(dir, NAMES_MARK))) {
      this.named.add(workspaceId);
      return;
    }
    const entriesDir = join(dir, ENTRIES);
    const names = await listEntryNames(entriesDir);
    // No inbox yet: nothing to upgrade, and the first post marks it.
    if (names.length === 0) return;
    for (const name of names) {
      if (name.to !== undefined) continue;
      // An entry that does not parse keeps its name: whoever reads it is told it is damaged, as
      // before, and the rest of the inbox is upgraded and served.
      const to = await this.readEntry(workspaceId, name).then(
        (entry) => entry?.to,
        (error: unknown) => {
          if (error instanceof CorruptJson) return undefined;
          throw error;
        },
      );
      if (to !== undefined)
        await rename(join(entriesDir, name.file), join(entriesDir, entryFile(name.seq, name.id, to)));
    }
    await syncDir(entriesDir);
    await this.mark(workspaceId);
  }

  /** Records that every name in the workspace's inbox carries its addressee. */
  async mark(workspaceId: string): Promise<void> {
    await writeJsonAtomic(join(this.storage.dir(workspaceId), NAMES_MARK), {
      entryNamesCarryAddressee: true,
    });
    this.named.add(workspaceId);
  }
}
