import { readdir } from "node:fs/promises";
import { join, relative } from "node:path";

/** Every path under `dir`, relative to it, sorted; folders end with `/`. */
export async function listTree(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) {
        found.push(`${relative(dir, path)}/`);
        await walk(path);
      } else {
        found.push(relative(dir, path));
      }
    }
  };
  await walk(dir);
  return found.sort();
}
