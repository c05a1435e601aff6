import { resolve } from "node:path";

// The catalog's part of instance.json's `connections` section. The connections app owns the
// section; it spreads `catalogConfigProperties` into its schema's `properties` and calls
// `resolveCatalogSettings` from its own `resolve` (platform/files/config.ts is the model).

export interface CatalogSettings {
  /** The operator's folder of `server.json` files, absolute; none when instance.json names none. */
  catalogDir: string | undefined;
}

/** JSON Schema properties of `connections` that the catalog reads. */
export const catalogConfigProperties = {
  catalogDir: {
    type: "string",
    minLength: 1,
    description:
      "Folder of MCP registry server.json files offered to every workspace, relative to this file.",
  },
} as const;

/** The catalog's settings from the `connections` section (validated already); a relative folder is relative to instance.json. */
export function resolveCatalogSettings(section: unknown, where: { baseDir: string }): CatalogSettings {
  const file = (section ?? {}) as { catalogDir?: string };
  return { catalogDir: file.catalogDir === undefined ? undefined : resolve(where.baseDir, file.catalogDir) };
}
