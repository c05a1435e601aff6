import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { Logger } from "../log.ts";
import type { InstanceConfig } from "./schema.ts";

/**
 * Folders an app's section of instance.json names, which the app reads only when asked (a skill
 * listing, a catalog request): a mistyped one would otherwise show as nothing at all, with no word
 * at boot. The apps resolve them against the instance file's folder, as here.
 */
const CONFIGURED_FOLDERS = [
  { section: "skills", field: "orgDir", holds: "org-scope skills" },
  { section: "connections", field: "catalogDir", holds: "the instance's connection catalog" },
] as const;

/**
 * Warns, once at boot, for each configured folder that does not exist or is not a folder; boot
 * goes on (the folder may be mounted later). test/integration/boot.test.ts "configured folder".
 */
export async function warnMissingFolders(config: InstanceConfig, log: Pick<Logger, "warn">): Promise<void> {
  for (const { section, field, holds } of CONFIGURED_FOLDERS) {
    const named = (config.sections[section] as Record<string, unknown> | undefined)?.[field];
    if (typeof named !== "string") continue;
    const path = resolve(config.baseDir, named);
    const isFolder = await stat(path).then(
      (stats) => stats.isDirectory(),
      () => false,
    );
    if (!isFolder) {
      log.warn(
        { field: `${section}.${field}`, path },
        `${section}.${field} names a folder that does not exist (or is not a folder), so ${holds} ` +
          "is empty until it does: create it, or fix instance.json.",
      );
    }
  }
}
