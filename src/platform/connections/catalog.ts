import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { Conflict, Forbidden, InvalidInput, NotFound } from "../../errors.ts";
import type { Clock } from "../../kernel/clock.ts";
import type { Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { IdleCache } from "../../sources/idle-cache.ts";
import { landedIsDone } from "../../storage/atomic.ts";
import { createFileExclusive } from "../../storage/exclusive.ts";
import { KeyedLock } from "../../storage/keyed-lock.ts";
import { makeInPartition, removeFileSynced } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import { type RecoveryPass, sweepTempEntries } from "../../storage/recovery.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { DEFAULT_CATALOG_CACHE_BYTES } from "./catalog-config.ts";
import {
  catalogIdOf,
  checkServerJson,
  checkStoredServerJson,
  isCatalogId,
  MAX_ENTRY_BYTES,
  type ServerJson,
} from "./catalog-entry.ts";
import { CatalogFolder, type CatalogProblem, ProblemLog, readSmallJson } from "./catalog-folder.ts";

// The catalog of MCP servers a workspace can connect to: the operator's folder, offered to every
// workspace, and each workspace's own entries, `<ws>/connections/catalog/<id>.json`, added by its
// admins and visible only there (ADR 0038).

/** The most entries one workspace's admins may add. */
export const MAX_WORKSPACE_ENTRIES = 100;
/**
 * A workspace's entries unused this long are let go, and read from its folder at the next use: the
 * idle period of the file index (FILE_INDEX_IDLE_MS). Up to 100 entries of 64 KiB each, kept for
 * every workspace ever listed, one person's 1,000 workspaces held gigabytes (adr/0038, amended).
 */
export const CATALOG_INDEX_IDLE_MS = 10 * 60 * 1000;
const ENTRIES_FOLDER = "catalog";

export type CatalogScope = "instance" | "workspace";

export interface CatalogEntry {
  /** The registry name lowercased with `~` for its slash (catalog-entry.ts `catalogIdOf`). */
  id: string;
  scope: CatalogScope;
  server: ServerJson;
  /** Workspace entries: who added it, and when. */
  addedBy?: string;
  addedAt?: string;
}

/** A workspace entry as stored: the server.json as the admin sent it, and its provenance. */
interface StoredEntry {
  server: ServerJson;
  addedBy: string;
  addedAt: string;
}

interface WorkspaceIndex {
  entries: Map<string, CatalogEntry>;
  problems: CatalogProblem[];
  /** Each entry's stored file's size, by id: what the index weighs against the cache's budget. */
  storedBytes: Map<string, number>;
}

export interface CatalogOptions {
  /** The operator's folder (connections.catalogDir), absolute; none when instance.json names none. */
  dir: string | undefined;
  /** The connections app's folder of each workspace. */
  storage: PartitionPaths;
  clock: Clock;
  /** What the idle sweep waits on; Node's own when not given. */
  timers?: Timers;
  log: Logger;
  /** connections.catalogCacheBytes; DEFAULT_CATALOG_CACHE_BYTES when not given. */
  cacheBytes?: number;
}

export class Catalog {
  private readonly folder: CatalogFolder;
  // Each workspace's entries, read from disk on first use and then kept by add and remove
  // (adr/0025) while in use: a listing reads the folder again only after CATALOG_INDEX_IDLE_MS
  // unused, or once the least recently used past the byte budget (adr/0179). A read that failed
  // is not remembered: the next request tries again.
  private readonly indexes: IdleCache<WorkspaceIndex>;
  // Only workspaces whose folder has a problem: each is logged once, not at every read after idle.
  private readonly problemLogs = new Map<string, ProblemLog>();
  private readonly locks = new KeyedLock();

  constructor(private readonly options: CatalogOptions) {
    this.folder = new CatalogFolder(options.dir, options.clock, options.log);
    this.indexes = new IdleCache(
      (workspaceId) => this.loadIndex(workspaceId),
      async () => undefined,
      CATALOG_INDEX_IDLE_MS,
      {
        clock: options.clock,
        timers: options.timers,
        budget: { sizeOf: indexBytes, maxBytes: options.cacheBytes ?? DEFAULT_CATALOG_CACHE_BYTES },
      },
    );
  }

  /** Workspaces whose entries are in memory now. */
  get heldWorkspaces(): number {
    return this.indexes.size;
  }

  /** What the entries in memory weigh, as their stored files. */
  get heldBytes(): number {
    return this.indexes.bytes;
  }

  /** Lets go of the entries of workspaces unused for CATALOG_INDEX_IDLE_MS (also done on a timer). */
  sweep(now?: number): Promise<void> {
    return this.indexes.sweep(now);
  }

  /** A graceful stop: the idle timer ends, and the entries held are let go. */
  close(): Promise<void> {
    return this.indexes.close();
  }

  /** The operator's entries, in file-name order. */
  async instanceEntries(): Promise<CatalogEntry[]> {
    const { entries } = await this.folder.read();
    return entries.map(({ id, server }) => ({ id, scope: "instance", server }));
  }

  /** The operator's files that were skipped, and why. */
  async instanceProblems(): Promise<CatalogProblem[]> {
    return (await this.folder.read()).problems;
  }

  /**
   * What a workspace can connect to: the operator's entries, then its own by id. A workspace
   * entry whose id the operator's catalog has gained since it was added is shadowed: the
   * operator's is the one listed and connected, and the admin may still remove theirs.
   */
  async list(workspaceId: string): Promise<CatalogEntry[]> {
    const instance = await this.instanceEntries();
    const ids = new Set(instance.map((entry) => entry.id));
    const own = (await this.withIndex(workspaceId, async (index) => [...index.entries.values()]))
      .filter((entry) => !ids.has(entry.id))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    return [...instance, ...own];
  }

  /** The files of a workspace's catalog folder that were skipped, and why. */
  async workspaceProblems(workspaceId: string): Promise<CatalogProblem[]> {
    return this.withIndex(workspaceId, async (index) => index.problems);
  }

  /** One entry as `list` would show it to the workspace; `catalog_entry_not_found` otherwise. */
  async get(workspaceId: string, id: string): Promise<CatalogEntry> {
    if (!isCatalogId(id)) throw notFound();
    const instance = (await this.instanceEntries()).find((entry) => entry.id === id);
    const entry = instance ?? (await this.withIndex(workspaceId, async (index) => index.entries.get(id)));
    if (!entry) throw notFound();
    return entry;
  }

  /**
   * Adds a server.json to one workspace's catalog, by an admin; its id comes from its name.
   * `admitted` is asked just before the entry's file is linked into place, as `remove`'s before its
   * unlink: whether the admin still is one (adr/0154, amended).
   */
  async add(
    workspaceId: string,
    principalId: string,
    body: unknown,
    admitted: AccessCheck,
  ): Promise<CatalogEntry> {
    const checked = checkServerJson(body);
    if ("problem" in checked) throw new InvalidInput(checked.problem);
    const { server } = checked;
    const id = catalogIdOf(server.name);
    const record: StoredEntry = {
      server,
      addedBy: principalId,
      addedAt: new Date(this.options.clock()).toISOString(),
    };
    const text = `${JSON.stringify(record, null, 2)}\n`;
    if (Buffer.byteLength(text) > MAX_ENTRY_BYTES) {
      throw new InvalidInput(`The entry is larger than ${MAX_ENTRY_BYTES} bytes; a server.json is smaller.`);
    }
    return this.locks.run(workspaceId, async () => {
      if ((await this.instanceEntries()).some((entry) => entry.id === id)) {
        throw new Conflict(
          "catalog_entry_exists",
          `${server.name} is in the instance's catalog already (id ${id}): connect from that entry.`,
        );
      }
      // In use until the entry is in it: an index let go as idle mid-add, and read again before
      // the file was linked, would miss the entry.
      return this.withIndex(workspaceId, async (index) => {
        if (index.entries.has(id)) {
          throw new Conflict(
            "catalog_entry_exists",
            `${server.name} is in this workspace's catalog already (id ${id}); remove it first to replace it.`,
          );
        }
        if (skippedFile(index, id)) {
          throw new Conflict(
            "catalog_entry_exists",
            `This workspace's stored entry ${id} was skipped as a problem (listed under problems); remove it first to replace it.`,
          );
        }
        if (index.entries.size >= MAX_WORKSPACE_ENTRIES) {
          throw new Conflict(
            "catalog_full",
            `This workspace's catalog holds ${MAX_WORKSPACE_ENTRIES} entries, its most; remove one first.`,
          );
        }
        const dir = this.entriesDir(workspaceId);
        await makeInPartition(dir, workspaceId);
        if (!(await createFileExclusive(join(dir, `${id}.json`), text, admitted))) {
          throw new Conflict(
            "catalog_entry_exists",
            `${server.name} is in this workspace's catalog already.`,
          );
        }
        const entry: CatalogEntry = { id, scope: "workspace", ...record };
        index.entries.set(id, entry);
        index.storedBytes.set(id, Buffer.byteLength(text));
        return entry;
      });
    });
  }

  /**
   * Removes one of the workspace's own entries, one skipped as a problem included: a stored file
   * that no longer loads is still the admin's to remove, or its id could be neither listed, removed
   * nor added again. The operator's are removed from their folder.
   */
  async remove(workspaceId: string, id: string, admitted: AccessCheck): Promise<void> {
    if (!isCatalogId(id)) throw notFound();
    await this.locks.run(workspaceId, () =>
      this.withIndex(workspaceId, async (index) => {
        const skipped = skippedFile(index, id);
        if (!index.entries.has(id) && !skipped) {
          if ((await this.instanceEntries()).some((entry) => entry.id === id)) {
            throw new Forbidden(
              "This entry is in the instance's catalog, which the operator keeps in connections.catalogDir; a workspace removes only its own.",
            );
          }
          throw notFound();
        }
        const dir = this.entriesDir(workspaceId);
        admitted();
        // Gone already (removed by hand), or unlinked and its flush failed: gone for every reader
        // either way, so gone from the index too (ADR 0166).
        await removeFileSynced(join(dir, `${id}.json`)).catch(landedIsDone);
        index.entries.delete(id);
        index.storedBytes.delete(id);
        if (skipped) index.problems = index.problems.filter((problem) => problem !== skipped);
      }),
    );
  }

  /**
   * Drops a workspace's entries from memory: it was archived (the connections app's `archived`),
   * and its folder went with it.
   */
  forget(workspaceId: string): void {
    void this.indexes.evict(workspaceId);
    this.problemLogs.delete(workspaceId);
  }

  /** R1 in the workspace's catalog folder: a create that never linked its file into place. */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (!present.has(this.options.storage.partition)) return;
    await sweepTempEntries(this.entriesDir(workspaceId), pass);
  }

  private entriesDir(workspaceId: string): string {
    return join(this.options.storage.dir(workspaceId), ENTRIES_FOLDER);
  }

  /** Runs `work` on the workspace's index, read on first use, which is not let go meanwhile. */
  private withIndex<T>(workspaceId: string, work: (index: WorkspaceIndex) => Promise<T>): Promise<T> {
    return this.indexes.use(workspaceId, work);
  }

  private async loadIndex(workspaceId: string): Promise<WorkspaceIndex> {
    const dir = this.entriesDir(workspaceId);
    let names: string[];
    try {
      names = (await readdir(dir)).filter((name) => !name.startsWith(".")).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT")
        return { entries: new Map(), problems: [], storedBytes: new Map() };
      throw error;
    }
    const entries = new Map<string, CatalogEntry>();
    const storedBytes = new Map<string, number>();
    const problems: CatalogProblem[] = [];
    for (const file of names) {
      const read = await readStoredEntry(dir, file);
      if ("problem" in read) problems.push({ file, message: read.problem });
      else {
        entries.set(read.entry.id, read.entry);
        storedBytes.set(read.entry.id, read.bytes);
      }
    }
    const problemLog = this.problemLogs.get(workspaceId) ?? new ProblemLog();
    problemLog.report(problems, (problem) =>
      this.options.log.warn(
        { workspaceId, catalogFile: problem.file, problem: problem.message },
        "workspace catalog entry skipped",
      ),
    );
    // A log that saw no problem is a new one's equal: kept only for a folder that has one.
    if (problems.length > 0) this.problemLogs.set(workspaceId, problemLog);
    else this.problemLogs.delete(workspaceId);
    return { entries, problems, storedBytes };
  }
}

/**
 * What holding an index and each of its entries costs beyond their stored text (the objects,
 * maps and cache entry): one entry of 272 stored bytes held about 3.1 KB of heap in
 * `npm run bench -- memory`, while 100 entries of 60 KiB held about their stored size (adr/0179).
 */
export const INDEX_OVERHEAD_BYTES = 2048;
export const ENTRY_OVERHEAD_BYTES = 1024;

/**
 * An index's weight for the cache's budget: its entries' stored sizes with what parsing adds to
 * each, and its problems' text. Approximate by design, and known without walking the heap.
 */
function indexBytes(index: WorkspaceIndex): number {
  let bytes = INDEX_OVERHEAD_BYTES;
  for (const size of index.storedBytes.values()) bytes += size + ENTRY_OVERHEAD_BYTES;
  for (const problem of index.problems) bytes += problem.file.length + problem.message.length;
  return bytes;
}

async function readStoredEntry(
  dir: string,
  file: string,
): Promise<{ entry: CatalogEntry; bytes: number } | { problem: string }> {
  const id = file.endsWith(".json") ? file.slice(0, -".json".length) : "";
  if (!isCatalogId(id))
    return { problem: "Not a catalog entry's file name (<id>.json); Atrium did not write it." };
  const path = join(dir, file);
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (error) {
    return { problem: `Cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"}).` };
  }
  const read = await readSmallJson(path, size);
  if ("problem" in read) return read;
  const stored = read.value as Partial<StoredEntry> | null;
  if (
    typeof stored !== "object" ||
    stored === null ||
    typeof stored.addedBy !== "string" ||
    typeof stored.addedAt !== "string"
  ) {
    return { problem: "Not a stored catalog entry ({server, addedBy, addedAt})." };
  }
  const checked = checkStoredServerJson(stored.server);
  if ("problem" in checked) return checked;
  if (catalogIdOf(checked.server.name) !== id) {
    return {
      problem: `Holds ${checked.server.name}, whose id is ${catalogIdOf(checked.server.name)}, not ${id}.`,
    };
  }
  return {
    entry: {
      id,
      scope: "workspace",
      server: checked.server,
      addedBy: stored.addedBy,
      addedAt: stored.addedAt,
    },
    bytes: size,
  };
}

/** The problem a workspace's stored file for `id` was skipped with, if it was. */
function skippedFile(index: WorkspaceIndex, id: string): CatalogProblem | undefined {
  return index.problems.find((problem) => problem.file === `${id}.json`);
}

function notFound(): NotFound {
  return new NotFound(
    "catalog_entry_not_found",
    "No catalog entry with that id here; GET …/catalog lists them.",
  );
}
