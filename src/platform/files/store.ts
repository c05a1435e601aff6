import { type FileHandle, open, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Conflict, InvalidInput, NotFound, PayloadTooLarge } from "../../errors.ts";
import { type Clock, systemClock } from "../../kernel/clock.ts";
import type { EventPublisher } from "../../kernel/events.ts";
import { systemTimers, type Timers } from "../../kernel/timers.ts";
import type { Logger } from "../../log.ts";
import { writeJsonAtomic } from "../../storage/atomic.ts";
import { exists } from "../../storage/folders.ts";
import { archivedDuringCreate, makeInPartition, RecordFolders } from "../../storage/owned-records.ts";
import type { PartitionPaths } from "../../storage/paths.ts";
import type { LeftoverRules, RecoveryPass } from "../../storage/recovery.ts";
import { SyncedFileWriter } from "../../storage/synced-file-writer.ts";
import type { AccessCheck } from "../../workspace/access-check.ts";
import { type RecordLocation, RecordLocator } from "../record-locator.ts";
import { type ContentFill, fillFromBody, fillFromBytes, type WriteProgress } from "./content-fill.ts";
import { FileListings, type FilePage, type PageRequest } from "./listings.ts";
import {
  checkFileName,
  checkMimeType,
  DEFAULT_MIME_TYPE,
  FILE_NAME_RULE,
  type FileMeta,
  isFileId,
  newFileId,
} from "./model.ts";
import { ContentSizeMismatch, parseFileMeta } from "./stored-meta.ts";

const CONTENT_FILE = "content";
const META_FILE = "meta.json";

export interface NewFile {
  name: string;
  mimeType?: string | undefined;
}

/**
 * Files at `<ws>/files/<owner>/fl_…/{content,meta.json}`. A file appears whole: it is
 * staged in a temp folder beside its final place and renamed there, so a failed or
 * oversized write leaves nothing behind (test/integration/files-rest.test.ts). Two indexes,
 * both caches of disk kept by these writers (adr/0025): the locator (file id → workspace and
 * owner, rebuilt at boot) and the metadata index (each partition's files, built on its first
 * use, adr/0050), which answers info and lists without reading a meta.json.
 */
export class FileStore implements LeftoverRules {
  private readonly locator = new RecordLocator();
  private readonly listings: FileListings;
  /** Stages each file beside its place and renames it in or out whole (R3, R4). */
  private readonly folders = new RecordFolders();

  constructor(
    private readonly storage: PartitionPaths,
    readonly maxBytes: number,
    private readonly events: EventPublisher,
    private readonly clock: Clock = systemClock,
    /** Where a file the lists leave out (its meta.json unreadable), and a full disk, are said. */
    private readonly log?: Pick<Logger, "warn">,
    /** What the metadata index's idle sweep waits on. */
    timers: Timers = systemTimers,
  ) {
    this.listings = new FileListings(
      storage,
      (ws, owner, id) => this.readMeta(ws, owner, id),
      clock,
      log,
      timers,
    );
  }

  /**
   * Stores `content` as a new file. With `onProgress`, the bytes go to disk a chunk at a time and
   * each chunk is reported once written, so a caller can show a large write advancing. Here and in
   * `upload` and `delete`, `access` is asked under the partition's lock just before the one rename
   * that makes the change seen: refused, nothing is stored or removed, the staging folder is
   * removed, and its refusal is thrown (adr/0154, amended).
   */
  async write(
    workspaceId: string,
    ownerId: string,
    file: NewFile,
    content: Uint8Array,
    access: AccessCheck,
    onProgress?: WriteProgress,
  ): Promise<FileMeta> {
    if (content.byteLength > this.maxBytes) {
      // Said of the file, not of a body: files__write's caller sent arguments, not an upload.
      throw new PayloadTooLarge(
        this.maxBytes,
        `The file is ${content.byteLength} bytes; a file here is at most ${this.maxBytes} bytes (files.maxUploadBytes). Nothing was stored.`,
      );
    }
    return this.commit(workspaceId, ownerId, file, fillFromBytes(content, onProgress), access);
  }

  /**
   * Streams a body to disk, counting as it goes; over the limit, the staging folder is removed.
   * `access` is asked once the whole body is on disk, and again just before the file is put in
   * place: its sender chose how long the body took, and a refusal then spares the flush.
   */
  async upload(
    workspaceId: string,
    ownerId: string,
    file: NewFile,
    body: Readable | ReadableStream<Uint8Array> | null,
    access: AccessCheck,
  ): Promise<FileMeta> {
    const fill = fillFromBody(body, this.maxBytes);
    const filled: ContentFill = async (writer) => {
      const digest = await fill(writer);
      access();
      return digest;
    };
    return this.commit(workspaceId, ownerId, file, filled, access);
  }

  private async commit(
    workspaceId: string,
    ownerId: string,
    file: NewFile,
    fill: ContentFill,
    access: AccessCheck,
  ): Promise<FileMeta> {
    const name = checkFileName(file.name);
    if (!name) throw new InvalidInput(FILE_NAME_RULE);
    const mimeType = file.mimeType === undefined ? DEFAULT_MIME_TYPE : checkMimeType(file.mimeType);
    if (!mimeType)
      throw new InvalidInput(`"${String(file.mimeType).slice(0, 80)}" is not a MIME type like text/plain.`);
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    await makeInPartition(ownerDir, workspaceId);
    const id = newFileId();
    let staged: string | undefined;
    const created = this.folders.create(
      ownerDir,
      id,
      async (staging): Promise<FileMeta> => {
        staged = staging;
        const writer = await SyncedFileWriter.create(join(staging, CONTENT_FILE));
        let sha256: string;
        try {
          sha256 = await fill(writer);
          await writer.sync();
        } finally {
          await writer.close();
        }
        const meta: FileMeta = {
          id,
          name,
          mimeType,
          size: writer.size,
          sha256,
          workspaceId,
          ownerId,
          visibility: "private",
          createdAt: new Date(this.clock()).toISOString(),
        };
        await writeJsonAtomic(join(staging, META_FILE), meta);
        return meta;
      },
      {
        commit: (rename, added) =>
          this.listings.change(workspaceId, ownerId, async () => {
            access();
            await rename();
            this.locator.set(id, { workspaceId, ownerId });
            return { added };
          }),
        step: (change) => this.ownStep(workspaceId, ownerId, change),
      },
    );
    // A workspace archived mid-write took the staging folder along: removed there, answered 404.
    // A full disk is thrown on as it is: the edges answer it (storage/storage-full.ts).
    const meta = await created.catch(async (error: unknown) => {
      throw await archivedDuringCreate(error, this.storage, workspaceId, staged);
    });
    // Only once the file is durable in its place; a failed write announces nothing.
    this.events.publish({
      type: "file.created",
      workspaceId,
      ownerId,
      file: { id, name, mimeType, size: meta.size, createdAt: meta.createdAt },
    });
    return meta;
  }

  /** One page of the owner's files in a workspace, newest first, from the partition's listing. */
  page(workspaceId: string, ownerId: string, request: PageRequest): Promise<FilePage> {
    return this.listings.page(workspaceId, ownerId, request);
  }

  /** A graceful stop: the metadata index's idle timer ends, and the index is dropped. */
  close(): Promise<void> {
    return this.listings.close();
  }

  /** A file's metadata, from the index: no disk read (adr/0050). */
  async info(workspaceId: string, ownerId: string, fileId: string): Promise<FileMeta> {
    const meta = isFileId(fileId) ? await this.listings.get(workspaceId, ownerId, fileId) : undefined;
    if (!meta) throw fileNotFound();
    return meta;
  }

  /**
   * A file's metadata and its whole content, for files__read: through openContent, so its size is
   * checked as a download's is, and checked again once read, in case it changed in between.
   */
  async read(
    workspaceId: string,
    ownerId: string,
    fileId: string,
  ): Promise<{ meta: FileMeta; content: Buffer }> {
    const { meta, content: handle } = await this.openContent(workspaceId, ownerId, fileId);
    try {
      const content = await handle.readFile();
      const path = join(this.storage.recordDir(workspaceId, ownerId, fileId), CONTENT_FILE);
      if (content.byteLength !== meta.size)
        throw new ContentSizeMismatch(path, content.byteLength, meta.size);
      return { meta, content };
    } finally {
      await handle.close();
    }
  }

  /**
   * The file's metadata and its content opened for reading, for a download; whoever takes the
   * handle closes it (a read stream made from it does). Opened and measured before anything is
   * answered: a file gone from disk is a 404, and one whose size is not its metadata's fails
   * (ContentSizeMismatch), never a download whose Content-Length it cannot keep.
   */
  async openContent(
    workspaceId: string,
    ownerId: string,
    fileId: string,
  ): Promise<{ meta: FileMeta; content: FileHandle }> {
    const meta = await this.info(workspaceId, ownerId, fileId);
    const path = join(this.storage.recordDir(workspaceId, ownerId, fileId), CONTENT_FILE);
    let content: FileHandle;
    try {
      content = await open(path, "r");
    } catch (error) {
      // Removed on disk since the index last looked (adr/0050).
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw fileNotFound();
      throw error;
    }
    try {
      const { size } = await content.stat();
      if (size !== meta.size) throw new ContentSizeMismatch(path, size, meta.size);
    } catch (error) {
      await content.close();
      throw error;
    }
    return { meta, content };
  }

  /** Deletes a file; a refused `access` leaves it in place (see `write`). */
  async delete(workspaceId: string, ownerId: string, fileId: string, access: AccessCheck): Promise<void> {
    await this.info(workspaceId, ownerId, fileId);
    const ownerDir = this.storage.ownerDir(workspaceId, ownerId);
    const removal = await this.folders.remove(ownerDir, fileId, {
      commit: (rename) =>
        this.listings.change(workspaceId, ownerId, async () => {
          access();
          await rename();
          this.locator.delete(fileId, { workspaceId, ownerId });
          return { removed: fileId };
        }),
      step: (change) => this.ownStep(workspaceId, ownerId, change),
    });
    // A concurrent delete of the same file renamed it first: to this caller it is already gone,
    // not a server error (test/integration/concurrency.test.ts).
    if (removal === "gone") throw fileNotFound();
    this.events.publish({ type: "file.deleted", workspaceId, ownerId, fileId });
  }

  /**
   * Resolves a bare file id to its workspace in one lookup, whatever the number of
   * workspaces: the locator says where the id lives, and a place counts only when the caller owns
   * it and is a member of that workspace now (`isMember`), so a workspace the caller left, and
   * another owner's copy of the same folder, are not reached. A miss is final: the locator holds
   * every file written through Atrium and every one the last recovery walk found on disk
   * (adr/0025). The caller's own copies in two of their workspaces are neither: `409
   * file_id_ambiguous`, naming both, until one is gone (adr/0111;
   * test/integration/files-duplicate-ids.test.ts).
   */
  async locate(ownerId: string, fileId: string, isMember: (workspaceId: string) => boolean): Promise<string> {
    const found = await this.locator.workspacesOf(ownerId, fileId, isMember, ({ workspaceId }) =>
      exists(this.storage.recordDir(workspaceId, ownerId, fileId)),
    );
    const [workspaceId] = found;
    if (workspaceId === undefined) throw fileNotFound();
    if (found.length > 1)
      throw new Conflict(
        "file_id_ambiguous",
        `${fileId} names a file of yours in more than one workspace (${found.join(", ")}): an operator copied or restored it twice. Reach each through its workspace's files tools, or ask an operator to give one copy a new id.`,
      );
    return workspaceId;
  }

  /**
   * R3 and R4 in each owner partition of a workspace, and the locator's entries for the files
   * found there (the walk reads these folders anyway): at boot, every file; at housekeeping, also
   * a file folder an operator copied in on disk, which no writer told the locator of.
   */
  async recoverWorkspace(
    workspaceId: string,
    present: ReadonlySet<string>,
    pass: RecoveryPass,
  ): Promise<void> {
    if (!present.has(this.storage.partition)) return;
    const owners = await this.folders.recoverPartition(this.storage.dir(workspaceId), pass);
    const duplicates = this.locator.remember(workspaceId, owners, (name) =>
      isFileId(name) ? name : undefined,
    );
    for (const { recordId, locations } of duplicates) this.warnDuplicate(recordId, locations);
  }

  /**
   * One id in two file folders is two files (each named by its path), but a bare id can name only
   * one: said once, when a walk first finds the second place, with every path and what to do
   * (adr/0111; test/integration/files-duplicate-ids.test.ts).
   */
  private warnDuplicate(fileId: string, locations: readonly RecordLocation[]): void {
    this.log?.warn(
      {
        fileId,
        paths: locations.map(({ workspaceId, ownerId }) =>
          this.storage.recordDir(workspaceId, ownerId, fileId),
        ),
      },
      "file id held in more than one place: each owner reaches their own copy by its bare id, and one owner's copies in two workspaces are reached by neither (409 file_id_ambiguous). Move every copy but one to a new fl_<24 hex> folder name (it becomes its own file) or out of the data root.",
    );
  }

  /**
   * A change of the writer's own temp entries in the owner folder, under the index's lock so its
   * mtime is not taken for an operator's edit: else every write and delete would rebuild the
   * partition, reading each of its meta.json files (adr/0050).
   */
  private ownStep(workspaceId: string, ownerId: string, change: () => Promise<unknown>): Promise<void> {
    return this.listings.change(workspaceId, ownerId, async () => {
      await change();
      return undefined;
    });
  }

  /**
   * A file's metadata as its folder holds it, named by where it is: the path is authoritative and
   * the ids inside meta.json are copies (CONTEXT.md, Primitive). A folder an operator copied
   * (`cp -r fl_A fl_B`) is fl_B, not a second fl_A that hides it and leaves the index rebuilding
   * after every write (test/unit/platform/files/file-index.test.ts "a copied file folder").
   */
  private async readMeta(workspaceId: string, ownerId: string, fileId: string): Promise<FileMeta> {
    const path = join(this.storage.recordDir(workspaceId, ownerId, fileId), META_FILE);
    return parseFileMeta(path, await readFile(path, "utf8"), { id: fileId, workspaceId, ownerId });
  }
}

function fileNotFound(): NotFound {
  return new NotFound("file_not_found", "No file with that id that you can reach.");
}
