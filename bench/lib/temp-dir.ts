import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Disposable, track } from "./cleanup.ts";

export interface TempDir extends Disposable {
  path: string;
}

export async function makeTempDir(prefix: string): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), `${prefix}-`));
  return track({
    path,
    dispose: () => rm(path, { recursive: true, force: true }),
    disposeNow: () => rmSync(path, { recursive: true, force: true }),
  });
}
