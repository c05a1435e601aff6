import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import { mapBounded } from "../../src/storage/bounded.ts";

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/**
 * A data root where the dev principal belongs to `count` workspaces (`ws_0…01` upward), each
 * holding one of their files, written straight to disk in Atrium's layout: creating 10,000
 * through Atrium would take minutes. Answers the workspace ids and the newest workspace's file.
 */
export async function buildWorkspaceRoot(
  root: string,
  count: number,
): Promise<{ workspaceIds: string[]; newestFile: string }> {
  const owner = DEV_PRINCIPAL.id;
  const start = Date.UTC(2026, 0, 1);
  const workspaceIds = Array.from({ length: count }, (_, i) => `ws_${hex(i + 1, 16)}`);
  await mapBounded(
    Array.from({ length: count }, (_, i) => i),
    64,
    async (i) => {
      const id = workspaceIds[i] as string;
      const at = new Date(start + i * 1000).toISOString();
      const fileId = `fl_${hex(i + 1, 24)}`;
      const record = join(root, id, "files", owner, fileId);
      await mkdir(record, { recursive: true, mode: 0o700 });
      const members = [{ principalId: owner, role: "admin", addedAt: at }];
      await writeFile(
        join(root, id, "workspace.json"),
        JSON.stringify({ id, name: `W${i}`, createdAt: at, updatedAt: at, members }),
      );
      await writeFile(join(record, "content"), "x");
      const meta = { id: fileId, name: "x.txt", mimeType: "text/plain", size: 1, sha256: "0".repeat(64) };
      await writeFile(
        join(record, "meta.json"),
        JSON.stringify({ ...meta, workspaceId: id, ownerId: owner, visibility: "private", createdAt: at }),
      );
    },
  );
  return { workspaceIds, newestFile: `fl_${hex(count, 24)}` };
}
