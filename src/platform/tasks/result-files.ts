import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Logger } from "../../log.ts";
import type { ToolCaller, ToolDispatch } from "../../sources/dispatch.ts";
import { joinToolName } from "../../sources/tool-names.ts";
import type { WorkspaceStore } from "../../workspace/store.ts";
import type { TaskSettings } from "./config.ts";
import type { Run } from "./model.ts";
import { textOf } from "./outcome.ts";

const WRITE = joinToolName("files", "write");
const INFO = joinToolName("files", "info");
const DELETE = joinToolName("files", "delete");
const LIST = joinToolName("files", "list");
/** The files app's largest page (files/listings.ts MAX_PAGE_SIZE). */
const LIST_PAGE = 1000;

export interface ResultFilesDeps {
  dispatch: ToolDispatch;
  workspaces: Pick<WorkspaceStore, "roleOf">;
  settings: Pick<TaskSettings, "inlineResultBytes">;
  log: Logger;
}

/** The name a run's result file is written under: how a crash's unreferenced one is found. */
export function resultFileName(runId: string): string {
  return `${runId}-result.json`;
}

/**
 * A run's result kept as a file of its owner's: written, looked at and deleted through the one
 * dispatch as the owner, like any call of theirs (ADR 0044), so the files app's own limits and
 * index apply. The file belongs to its run: it is deleted before the run's record is removed, so a
 * record that names a file is removed only once that file is gone (ADR 0079).
 *
 * Nothing here is called before the app's `ready()`: a dispatch then would build a workspace's
 * registry before every app has started.
 */
export class ResultFiles {
  constructor(private readonly deps: ResultFilesDeps) {}

  /**
   * Where a run keeps its result: in the record when it is small; else written to the owner's
   * files and referenced. When even that fails, the record says why instead of holding a result.
   */
  async keep(run: Run, result: CallToolResult): Promise<Pick<Run, "result" | "resultFile" | "resultNote">> {
    const text = JSON.stringify(result);
    const size = Buffer.byteLength(text);
    if (size <= this.deps.settings.inlineResultBytes) return { result };
    try {
      const stored = await this.call(run, WRITE, {
        name: resultFileName(run.id),
        text,
        mimeType: "application/json",
      });
      const id = (stored.structuredContent as { id?: unknown } | undefined)?.id;
      if (!stored.isError && typeof id === "string") return { resultFile: { id, size } };
      return {
        resultNote: `The result (${size} bytes) was too large to keep and was not stored: ${textOf(stored)}`,
      };
    } catch (error) {
      return {
        resultNote: `The result (${size} bytes) was too large to keep and was not stored: ${(error as Error).message}`,
      };
    }
  }

  /**
   * Deletes the run's result file, if it has one; true when no file of the run's is left (it had
   * none, it is deleted now, or it was gone already), so its record may go. False when it could
   * not be deleted — the owner is no longer a member (nobody can reach it, and the task cannot
   * run to make more), or the delete failed — and the record must stay to name it: the run is
   * tried again when its workspace's runs are next read (store.ts).
   */
  async discard(run: Run): Promise<boolean> {
    if (!run.resultFile) return true;
    return this.delete(run, run.resultFile.id);
  }

  /**
   * A run a crash left `running` may have had its result written and not yet referenced: a file
   * of the owner's named for the run. Deleted, since the interrupted run keeps no result.
   */
  async discardUnreferenced(run: Run): Promise<void> {
    if (!this.ownerIsMember(run)) return;
    const name = resultFileName(run.id);
    const found: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.call(run, LIST, { limit: LIST_PAGE, ...(cursor ? { cursor } : {}) });
      if (page.isError) throw new Error(`${LIST} failed: ${textOf(page)}`);
      const listed = page.structuredContent as { files: { id: string; name: string }[]; nextCursor?: string };
      for (const file of listed.files) if (file.name === name) found.push(file.id);
      cursor = listed.nextCursor;
    } while (cursor);
    for (const fileId of found) await this.delete(run, fileId);
  }

  /**
   * The run as a reader sees it: a result file deleted by hand since (its owner may delete it) is
   * not answered as `resultFile`, which would point at nothing, but as a `resultNote` saying so.
   * A file of an owner who is no longer a member is answered as recorded: it is there.
   */
  async shown(run: Run): Promise<Run> {
    const file = run.resultFile;
    if (!file || !this.ownerIsMember(run)) return run;
    if (await this.exists(run, file.id)) return run;
    const { resultFile: _gone, ...rest } = run;
    return {
      ...rest,
      resultNote: `The result (${file.size} bytes) was stored as file ${file.id}, which is no longer there.`,
    };
  }

  private async delete(run: Run, fileId: string): Promise<boolean> {
    if (!this.ownerIsMember(run)) return false;
    try {
      const deleted = await this.call(run, DELETE, { id: fileId });
      if (!deleted.isError) return true;
      // An error is a file gone already or a delete that failed: the files app's index tells which.
      return !(await this.exists(run, fileId));
    } catch (error) {
      this.deps.log.warn(
        { err: error, runId: run.id, fileId },
        "task result file not deleted; tried again later",
      );
      return false;
    }
  }

  private async exists(run: Run, fileId: string): Promise<boolean> {
    return !(await this.call(run, INFO, { id: fileId })).isError;
  }

  /**
   * Asked first, so a removed owner's runs do not reach the dispatch: it would refuse them, and
   * record each refusal where refusals are audited.
   */
  private ownerIsMember(run: Run): boolean {
    return this.deps.workspaces.roleOf(run.workspaceId, run.ownerId) !== undefined;
  }

  private call(run: Run, tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const owner: ToolCaller = { principalId: run.ownerId, workspaceId: run.workspaceId };
    return this.deps.dispatch.call(owner, tool, args, { requestId: run.id });
  }
}
