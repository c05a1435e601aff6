import { rm } from "node:fs/promises";
import { join } from "node:path";
import { TEMP_PREFIX } from "../../storage/atomic.ts";
import { exists, namesIn } from "../../storage/folders.ts";
import { archivedDuringCreate } from "../../storage/owned-records.ts";
import type { StorageLayout } from "../../storage/paths.ts";
import { versionsDir } from "./history.ts";

/**
 * What a workspace skill's failed save answers, once it has removed what it left in `_archive/`,
 * where no recovery pass walks (adr/0024). A workspace archived while the save ran took along a
 * new skill's staging folder (`staging`), and any temp file the save had opened but not yet
 * renamed into place: SKILL.md's in the skill's folder, a version's or its metadata's in its
 * history. The skill's lock holds every other save of it, so a temp entry in those two folders
 * of the archived copy is this save's, or a crashed one's; either is debris the archive must not
 * keep (test/unit/platform/skills/writer-archived.test.ts).
 */
export async function archivedDuringSave(
  error: unknown,
  layout: StorageLayout,
  workspaceId: string,
  name: string,
  staging: string | undefined,
): Promise<unknown> {
  const dir = layout.workspaceSkillsDir(workspaceId);
  if (await exists(dir)) return error;
  const archived = await namesIn(layout.archiveDir());
  for (const folder of [join(dir, name), versionsDir(dir, name)]) {
    for (const copy of layout.archivedCopies(workspaceId, folder, archived)) {
      for (const entry of await namesIn(copy)) {
        if (entry.startsWith(TEMP_PREFIX)) await rm(join(copy, entry), { recursive: true, force: true });
      }
    }
  }
  return archivedDuringCreate(error, skillFolders(layout), workspaceId, staging);
}

/** A workspace's skills folder as archivedDuringCreate asks for an app folder's paths. */
function skillFolders(layout: StorageLayout): Parameters<typeof archivedDuringCreate>[1] {
  return {
    dir: (workspaceId) => layout.workspaceSkillsDir(workspaceId),
    archiveDir: () => layout.archiveDir(),
    archivedCopies: (workspaceId, path, archived) => layout.archivedCopies(workspaceId, path, archived),
  };
}
