import { createHash, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, type TempDir } from "./temp-dir.ts";

export interface MetadataFixture {
  dir: TempDir;
  fileId: string;
}

// A small metadata record shaped like what Atrium keeps per file, so the baselines read and parse
// roughly the same number of bytes as files__info does.
export async function createMetadataFixture(): Promise<MetadataFixture> {
  const dir = await makeTempDir("atrium-bench-fixture");
  const fileId = `fl_${randomBytes(12).toString("hex")}`;
  const now = new Date().toISOString();
  const metadata = {
    id: fileId,
    name: "bench.txt",
    size: 5,
    mimeType: "text/plain",
    sha256: createHash("sha256").update("hello").digest("hex"),
    createdAt: now,
    updatedAt: now,
  };
  await writeFile(join(dir.path, `${fileId}.json`), JSON.stringify(metadata));
  return { dir, fileId };
}
