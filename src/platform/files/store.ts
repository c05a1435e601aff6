import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { InvalidInput, NotFound, PayloadTooLarge, WorkspaceNotFound } from "../../errors.ts";
import { TEMP_PREFIX, writeJsonAtomic } from "../../storage/atomic.ts";
import { makeFolderIfMissing } from "../../storage/folders.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import {
  checkFileName,
  checkMimeType,
  DEFAULT_MIME_TYPE,
  type FileMeta,
  isFileId,
  newFileId,
} from "./model.ts";

const CONTENT_FILE = "content";
const META_FILE = "meta.json";

export interface NewFile {
  name: string;
  mimeType?: string | undefined;
}

/**
 * Files at `<ws>/files/<owner>/fl_…/{content,meta.json}`. A file appears whole: it is
 * staged in a temp folder beside its final place and renamed there, so a failed or
 * oversized write leaves nothing behind (test/integration/files-rest.test.ts).
 */
export class FileStore {
  constructor(
    private readonly layout: StorageLayout,
    readonly maxBytes: number,
  ) {}

  async write(workspaceId: string, ownerId: string, file: NewFile, content: Uint8Array): Promise<FileMeta> {
    if (content.byteLength > this.maxBytes) throw new PayloadTooLarge(this.maxBytes);
    return this.commit(workspaceId, ownerId, file, async (handle, hash) => {
      hash.update(content);
      await handle.writeFile(content);
      return content.byteLength;
    });
  }

  /** Streams a body to disk, counting as it goes; over the limit, the staging folder is removed. */
  async upload(
    workspaceId: string,
    ownerId: string,
    file: NewFile,
    body: ReadableStream<Uint8Array> | null,
  ): Promise<FileMeta> {
    return this.commit(workspaceId, ownerId, file, async (handle, hash) => {
      let size = 0;
      if (!body) return size;
      const reader = body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.byteLength;
          if (size > this.maxBytes) throw new PayloadTooLarge(this.maxBytes);
          hash.update(value);
          await handle.write(value);
        }
      } finally {
        await reader.cancel().catch(() => undefined);
      }
      return size;
    });
  }

  private async commit(
    workspaceId: string,
    ownerId: string,
    file: NewFile,
    fill: (handle: FileHandle, hash: Hash) => Promise<number>,
  ): Promise<FileMeta> {
    const name = checkFileName(file.name);
    if (!name) throw new InvalidInput(`A file name is 1 to 255 characters with no control characters.`);
    const mimeType = file.mimeType === undefined ? DEFAULT_MIME_TYPE : checkMimeType(file.mimeType);
    if (!mimeType)
      throw new InvalidInput(`"${String(file.mimeType).slice(0, 80)}" is not a MIME type like text/plain.`);
    const ownerDir = await this.ensureOwnerDir(workspaceId, ownerId);
    const id = newFileId();
    const staging = join(ownerDir, `${TEMP_PREFIX}${id}`);
    await mkdir(staging);
    try {
      const hash = createHash("sha256");
      const handle = await open(join(staging, CONTENT_FILE), "wx", 0o600);
      let size: number;
      try {
        size = await fill(handle, hash);
        await handle.sync();
      } finally {
        await handle.close();
      }
      const meta: FileMeta = {
        id,
        name,
        mimeType,
        size,
        sha256: hash.digest("hex"),
        workspaceId,
        ownerId,
        visibility: "private",
        createdAt: new Date().toISOString(),
      };
      await writeJsonAtomic(join(staging, META_FILE), meta);
      await rename(staging, this.layout.recordDir(workspaceId, "files", ownerId, id));
      return meta;
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }

  /** Creates the owner partition inside an existing workspace; never creates the workspace. */
  private async ensureOwnerDir(workspaceId: string, ownerId: string): Promise<string> {
    const ownerDir = this.layout.ownerDir(workspaceId, "files", ownerId);
    try {
      await makeFolderIfMissing(this.layout.primitiveDir(workspaceId, "files"));
      await makeFolderIfMissing(ownerDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new WorkspaceNotFound(workspaceId);
      throw error;
    }
    return ownerDir;
  }

  async list(workspaceId: string, ownerId: string): Promise<FileMeta[]> {
    let entries: string[];
    try {
      entries = await readdir(this.layout.ownerDir(workspaceId, "files", ownerId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const metas = await Promise.all(
      entries.filter(isFileId).map((id) => this.readMeta(workspaceId, ownerId, id).catch(() => undefined)),
    );
    return metas
      .filter((meta): meta is FileMeta => meta !== undefined)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id));
  }

  async info(workspaceId: string, ownerId: string, fileId: string): Promise<FileMeta> {
    if (!isFileId(fileId)) throw fileNotFound();
    try {
      return await this.readMeta(workspaceId, ownerId, fileId);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw fileNotFound();
      throw error;
    }
  }

  async read(
    workspaceId: string,
    ownerId: string,
    fileId: string,
  ): Promise<{ meta: FileMeta; content: Buffer }> {
    const meta = await this.info(workspaceId, ownerId, fileId);
    const content = await readFile(
      join(this.layout.recordDir(workspaceId, "files", ownerId, fileId), CONTENT_FILE),
    );
    return { meta, content };
  }

  async stream(
    workspaceId: string,
    ownerId: string,
    fileId: string,
  ): Promise<{ meta: FileMeta; body: ReadableStream<Uint8Array> }> {
    const meta = await this.info(workspaceId, ownerId, fileId);
    const path = join(this.layout.recordDir(workspaceId, "files", ownerId, fileId), CONTENT_FILE);
    const body = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
    return { meta, body };
  }

  async delete(workspaceId: string, ownerId: string, fileId: string): Promise<void> {
    await this.info(workspaceId, ownerId, fileId);
    const dir = this.layout.recordDir(workspaceId, "files", ownerId, fileId);
    // Rename first so a reader never sees a folder with half its files removed.
    const doomed = join(
      this.layout.ownerDir(workspaceId, "files", ownerId),
      `${TEMP_PREFIX}deleted-${fileId}`,
    );
    try {
      await rename(dir, doomed);
    } catch (error) {
      // A concurrent delete of the same file renamed it first: to this caller it is already
      // gone, not a server error (test/integration/concurrency.test.ts).
      if ((error as NodeJS.ErrnoException).code === "ENOENT") throw fileNotFound();
      throw error;
    }
    await rm(doomed, { recursive: true, force: true });
  }

  /**
   * Resolves a bare file id to its workspace by looking only in the caller's own owner
   * partitions of the workspaces the caller belongs to now: the partition is both the
   * gate and the search scope, and a workspace the caller left is not searched.
   */
  async locate(ownerId: string, workspaceIds: readonly string[], fileId: string): Promise<string> {
    if (!isFileId(fileId)) throw fileNotFound();
    for (const workspaceId of workspaceIds) {
      const dir = this.layout.recordDir(workspaceId, "files", ownerId, fileId);
      if (await exists(join(dir, META_FILE))) return workspaceId;
    }
    throw fileNotFound();
  }

  private async readMeta(workspaceId: string, ownerId: string, fileId: string): Promise<FileMeta> {
    const dir = this.layout.recordDir(workspaceId, "files", ownerId, fileId);
    return JSON.parse(await readFile(join(dir, META_FILE), "utf8")) as FileMeta;
  }
}

function fileNotFound(): NotFound {
  return new NotFound("file_not_found", "No file with that id that you can reach.");
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
