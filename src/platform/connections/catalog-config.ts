import { resolve } from "node:path";

// The catalog's part of instance.json's `connections` section. The connections app owns the
// section; it spreads `catalogConfigProperties` into its schema's `properties` and calls
// `resolveCatalogSettings` from its own `resolve` (platform/files/config.ts is the model).

export interface CatalogSettings {
  /** The operator's folder of `server.json` files, absolute; none when instance.json names none. */
  catalogDir: string | undefined;
  /** What workspaces' catalog entries in memory may weigh in all, as stored (adr/0179). */
  catalogCacheBytes: number;
}

/**
 * What all workspaces' entries in memory may weigh, as their stored files, unless
 * `connections.catalogCacheBytes` says otherwise: the time bound alone let a burst of listings of
 * full catalogs (6.25 MiB each) hold gigabytes for ten minutes (adr/0179).
 */
export const DEFAULT_CATALOG_CACHE_BYTES = 64 * 1024 * 1024;
/** 8 MiB: one full workspace catalog (100 entries of 64 KiB) fits, so a listing of it is not read twice. */
export const MIN_CATALOG_CACHE_BYTES = 8 * 1024 * 1024;
export const MAX_CATALOG_CACHE_BYTES = 64 * 1024 * 1024 * 1024;

/** JSON Schema properties of `connections` that the catalog reads. */
export const catalogConfigProperties = {
  catalogDir: {
    type: "string",
    minLength: 1,
    description:
      "Folder of MCP registry server.json files offered to every workspace, relative to this file.",
  },
  catalogCacheBytes: {
    type: "integer",
    minimum: MIN_CATALOG_CACHE_BYTES,
    maximum: MAX_CATALOG_CACHE_BYTES,
    description:
      "Bytes of workspaces' own catalog entries kept in memory in all, as stored; the least recently used past it are read again from disk.",
  },
} as const;

/** The catalog's settings from the `connections` section (validated already); a relative folder is relative to instance.json. */
export function resolveCatalogSettings(section: unknown, where: { baseDir: string }): CatalogSettings {
  const file = (section ?? {}) as { catalogDir?: string; catalogCacheBytes?: number };
  return {
    catalogDir: file.catalogDir === undefined ? undefined : resolve(where.baseDir, file.catalogDir),
    catalogCacheBytes: file.catalogCacheBytes ?? DEFAULT_CATALOG_CACHE_BYTES,
  };
}
