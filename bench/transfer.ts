// A 49 MiB file downloaded from and uploaded to Atrium over HTTP, against `cp` of the same file
// on the same disk, in alternating repeats (download, cp, upload, ...), medians reported. The
// bytes are random, so nothing on the way can compress them. The file cache is warm for all
// three after the first repeat; the upload sends from memory, as cp reads from the cache.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { progress } from "./lib/progress.ts";
import type { TransferResult } from "./lib/report.ts";
import type { AtriumUnderTest } from "./lib/start-atrium.ts";
import { makeTempDir } from "./lib/temp-dir.ts";

const FILE_BYTES = 49 * 1024 * 1024;
const REPEATS = Number(process.env.BENCH_TRANSFER_REPEATS ?? 5);
const TIMEOUT_MS = 120_000;

export async function runTransferBench(atrium: AtriumUnderTest): Promise<TransferResult> {
  const temp = await makeTempDir("atrium-bench-transfer");
  const source = join(temp.path, "source.bin");
  await writeFile(source, randomBytes(FILE_BYTES));
  const bytes = await readFile(source);
  const fileId = await upload(atrium, bytes);
  const times = { download: [] as number[], upload: [] as number[], copy: [] as number[] };
  // One round first, unrecorded: warms the cache, the JIT and the connection pool for all three.
  for (let i = -1; i < REPEATS; i++) {
    const download = await timed(() => downloadAll(atrium, fileId));
    const copy = await timed(() => copyFile(source, join(temp.path, "copy.bin")));
    let uploaded = "";
    const up = await timed(async () => {
      uploaded = await upload(atrium, bytes);
    });
    await deleteFile(atrium, uploaded);
    await rm(join(temp.path, "copy.bin"), { force: true });
    if (i < 0) continue;
    times.download.push(download);
    times.copy.push(copy);
    times.upload.push(up);
  }
  await deleteFile(atrium, fileId);
  const mbps = (seconds: number) => FILE_BYTES / 1e6 / seconds;
  const result = {
    bytes: FILE_BYTES,
    repeats: REPEATS,
    downloadMBps: mbps(median(times.download)),
    uploadMBps: mbps(median(times.upload)),
    copyMBps: mbps(median(times.copy)),
  };
  progress(
    `transfer: download ${result.downloadMBps.toFixed(0)} MB/s, upload ${result.uploadMBps.toFixed(0)} MB/s, ` +
      `cp ${result.copyMBps.toFixed(0)} MB/s (medians of ${REPEATS})`,
  );
  return result;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

// node:http rather than fetch on the client side: fewer copies and no web streams, so the
// client's own cost, which cp does not have, stays as small as it can be.
function send(
  url: string,
  method: "GET" | "POST",
  body?: Buffer,
): Promise<{ status: number; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body
      ? { "content-type": "application/octet-stream", "content-length": String(body.length) }
      : {};
    const request = httpRequest(url, { method, headers, timeout: TIMEOUT_MS }, (response) => {
      let bytes = 0;
      const text: Buffer[] = [];
      response.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        // Only a short answer (an error, upload's metadata) is kept; a download is only counted.
        if (bytes <= 64 * 1024) text.push(chunk);
      });
      response.once("end", () =>
        resolve({ status: response.statusCode ?? 0, bytes, text: Buffer.concat(text).toString() }),
      );
      response.once("error", reject);
    });
    request.once("timeout", () =>
      request.destroy(new Error(`${method} ${url}: no answer in ${TIMEOUT_MS} ms`)),
    );
    request.once("error", reject);
    request.end(body);
  });
}

async function upload(atrium: AtriumUnderTest, bytes: Buffer): Promise<string> {
  const url = `${atrium.base}/v1/workspaces/${atrium.workspaceId}/files?name=bench.bin`;
  const { status, text } = await send(url, "POST", bytes);
  if (status !== 201) throw new Error(`upload: HTTP ${status}: ${text.slice(0, 300)}`);
  const meta = JSON.parse(text) as { id?: unknown; size?: unknown };
  if (typeof meta.id !== "string" || meta.size !== bytes.length)
    throw new Error(
      `upload: the answer does not describe a ${bytes.length}-byte file: ${text.slice(0, 300)}`,
    );
  return meta.id;
}

/** Reads the whole body and counts it; a short or failed download throws rather than look fast. */
async function downloadAll(atrium: AtriumUnderTest, fileId: string): Promise<void> {
  const { status, bytes } = await send(`${atrium.base}/v1/files/${fileId}`, "GET");
  if (status !== 200) throw new Error(`download: HTTP ${status}`);
  if (bytes !== FILE_BYTES) throw new Error(`download: got ${bytes} bytes of ${FILE_BYTES}`);
}

async function deleteFile(atrium: AtriumUnderTest, fileId: string): Promise<void> {
  const response = await fetch(`${atrium.base}/v1/files/${fileId}`, { method: "DELETE" });
  await response.arrayBuffer();
  if (response.status !== 204) throw new Error(`delete ${fileId}: HTTP ${response.status}`);
}

function copyFile(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("cp", [from, to], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`cp exited with ${code}`))));
  });
}
