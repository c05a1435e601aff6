import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEV_PRINCIPAL } from "../../src/identity/providers/dev.ts";
import { mapBounded } from "../../src/storage/bounded.ts";

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/** What each workspace holds besides its record: files of the dev user, and optionally more. */
export interface WorkspaceContent {
  /** Files of the dev user in each workspace; 1 unless told. */
  files?: number;
  /** A workspace skill (`<ws>/skills/<name>/SKILL.md`) in each. */
  skill?: boolean;
  /** Entries of each workspace's own connections catalog, each padded to about `catalogEntryBytes`. */
  catalogEntries?: number;
  catalogEntryBytes?: number;
}

/** A workspace catalog entry's id (catalog-entry.ts `catalogIdOf`): the name lowercased, `~` for its slash. */
export const benchCatalogId = (i: number) => `com.example~server-${i}`;

/**
 * A data root where the dev principal belongs to `count` workspaces (`ws_0…01` upward), each
 * holding `content`, written straight to disk in Atrium's layout: creating 10,000 through Atrium
 * would take minutes. Answers the workspace ids and the newest workspace's last file.
 */
export async function buildWorkspaceRoot(
  root: string,
  count: number,
  content: WorkspaceContent = {},
  firstNumber = 1,
): Promise<{ workspaceIds: string[]; newestFile: string }> {
  const owner = DEV_PRINCIPAL.id;
  const start = Date.UTC(2026, 0, 1);
  const files = content.files ?? 1;
  const workspaceIds = Array.from({ length: count }, (_, i) => `ws_${hex(firstNumber + i, 16)}`);
  const fileId = (i: number, f: number) => `fl_${hex((firstNumber + i) * 16 + f, 24)}`;
  await mapBounded(
    Array.from({ length: count }, (_, i) => i),
    64,
    async (i) => {
      const id = workspaceIds[i] as string;
      const at = new Date(start + i * 1000).toISOString();
      const members = [{ principalId: owner, role: "admin", addedAt: at }];
      await mkdir(join(root, id), { recursive: true, mode: 0o700 });
      await writeFile(
        join(root, id, "workspace.json"),
        JSON.stringify({ id, name: `W${i}`, createdAt: at, updatedAt: at, members }),
      );
      for (let f = 0; f < files; f++) await writeFileRecord(root, id, owner, fileId(i, f), at);
      if (content.skill) await writeSkill(root, id);
      for (let e = 0; e < (content.catalogEntries ?? 0); e++)
        await writeCatalogEntry(root, id, owner, e, content.catalogEntryBytes ?? 0, at);
    },
  );
  return { workspaceIds, newestFile: fileId(count - 1, files - 1) };
}

async function writeFileRecord(root: string, ws: string, owner: string, fileId: string, at: string) {
  const record = join(root, ws, "files", owner, fileId);
  await mkdir(record, { recursive: true, mode: 0o700 });
  await writeFile(join(record, "content"), "x");
  const meta = { id: fileId, name: `${fileId}.txt`, mimeType: "text/plain", size: 1, sha256: "0".repeat(64) };
  await writeFile(
    join(record, "meta.json"),
    JSON.stringify({ ...meta, workspaceId: ws, ownerId: owner, visibility: "private", createdAt: at }),
  );
}

async function writeSkill(root: string, ws: string) {
  const dir = join(root, ws, "skills", "careful-deletes");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(
    join(dir, "SKILL.md"),
    "---\nname: careful-deletes\ndescription: Confirm before deleting.\n---\nAsk the person before you delete anything.\n",
  );
}

/** One stored entry of the workspace's catalog, as the connections app writes it ({server, addedBy, addedAt}). */
async function writeCatalogEntry(
  root: string,
  ws: string,
  owner: string,
  e: number,
  bytes: number,
  at: string,
) {
  const dir = join(root, ws, "connections", "catalog");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const server = {
    name: `com.example/server-${e}`,
    description: "A server the workspace's admins added",
    version: "1.0.0",
    remotes: [{ type: "streamable-http", url: `https://server-${e}.example.com/mcp` }],
    ...(bytes > 0 && { _meta: { "com.example/notes": `${e}${"x".repeat(bytes)}` } }),
  };
  await writeFile(
    join(dir, `${benchCatalogId(e)}.json`),
    JSON.stringify({ server, addedBy: owner, addedAt: at }),
  );
}
