// A 49 MiB file downloaded from and uploaded to Atrium over HTTP, against `cp` of the same file
// on the same disk, in alternating repeats (download, cp, upload, ...), medians reported. The
// bytes are random, so nothing on the way can compress them. The file cache is warm for all
// three after the first repeat; the upload sends from memory, as cp reads from the cache. All
// three are timed by a small client process of plain Node (lib/transfer-client.mjs), not this
// tsx-loaded one, whose own cost per download was larger than Atrium's; Atrium's CPU per
// transfer is read from /proc, as the load rows' is. Also timed: cp followed by an fsync of the
// copy, the upload's baseline, since an upload is acknowledged only once on disk (adr/0024,
// adr/0063), which cp alone is not; and, unjudged, the same download from a plain Node server
// piping the file: the ceiling of a download in Node.
import { type ChildProcess, fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { track } from "./lib/cleanup.ts";
import { benchDir } from "./lib/paths.ts";
import { progress } from "./lib/progress.ts";
import type { TransferResult } from "./lib/report.ts";
import type { AtriumUnderTest } from "./lib/start-atrium.ts";
import { makeTempDir } from "./lib/temp-dir.ts";

const FILE_BYTES = 49 * 1024 * 1024;
const REPEATS = Number(process.env.BENCH_TRANSFER_REPEATS ?? 5);

export async function runTransferBench(atrium: AtriumUnderTest): Promise<TransferResult> {
  const temp = await makeTempDir("atrium-bench-transfer");
  const source = join(temp.path, "source.bin");
  await writeFile(source, randomBytes(FILE_BYTES));
  const client = startClient();
  const plainUrl = await startPlainFileServer(source);
  const upload = () => uploadFile(client, atrium, source);
  const { id: fileId } = await upload();
  const times = {
    download: [] as number[],
    upload: [] as number[],
    copy: [] as number[],
    copySynced: [] as number[],
    plainDownload: [] as number[],
  };
  const cpuMs = { download: [] as number[], upload: [] as number[] };
  // Atrium's CPU over one transfer, in ms; NaN where /proc is not available.
  const serverCpu = async (work: () => Promise<number>): Promise<[number, number]> => {
    const before = atrium.server.cpuUs() ?? Number.NaN;
    const seconds = await work();
    return [seconds, ((atrium.server.cpuUs() ?? Number.NaN) - before) / 1000];
  };
  // One round first, unrecorded: warms the cache, the JIT and the connection pool for all three.
  for (let i = -1; i < REPEATS; i++) {
    const [download, downloadCpu] = await serverCpu(() => downloadFile(client, atrium, fileId));
    const plainDownload = await client.run({ op: "download", url: plainUrl });
    if (plainDownload.bytes !== FILE_BYTES)
      throw new Error(`plain download: got ${plainDownload.bytes} bytes`);
    const copy = await client.run({ op: "copy", from: source, to: join(temp.path, "copy.bin") });
    await rm(join(temp.path, "copy.bin"), { force: true });
    const copySynced = await client.run({ op: "copy-synced", from: source, to: join(temp.path, "copy.bin") });
    let uploaded = "";
    const [up, upCpu] = await serverCpu(async () => {
      const { id, seconds } = await upload();
      uploaded = id;
      return seconds;
    });
    await deleteFile(atrium, uploaded);
    await rm(join(temp.path, "copy.bin"), { force: true });
    if (i < 0) continue;
    times.download.push(download);
    times.copy.push(copy.seconds);
    times.copySynced.push(copySynced.seconds);
    times.plainDownload.push(plainDownload.seconds);
    times.upload.push(up);
    cpuMs.download.push(downloadCpu);
    cpuMs.upload.push(upCpu);
  }
  await deleteFile(atrium, fileId);
  const mbps = (seconds: number) => FILE_BYTES / 1e6 / seconds;
  const result: TransferResult = {
    bytes: FILE_BYTES,
    repeats: REPEATS,
    downloadMBps: mbps(median(times.download)),
    uploadMBps: mbps(median(times.upload)),
    copyMBps: mbps(median(times.copy)),
    copySyncedMBps: mbps(median(times.copySynced)),
    plainNodeDownloadMBps: mbps(median(times.plainDownload)),
    downloadServerCpuMs: median(cpuMs.download),
    uploadServerCpuMs: median(cpuMs.upload),
  };
  progress(
    `transfer: download ${result.downloadMBps.toFixed(0)} MB/s, upload ${result.uploadMBps.toFixed(0)} MB/s, ` +
      `cp ${result.copyMBps.toFixed(0)} MB/s, cp + fsync ${result.copySyncedMBps.toFixed(0)} MB/s, ` +
      `plain Node download ${result.plainNodeDownloadMBps?.toFixed(0)} MB/s ` +
      `(medians of ${REPEATS}); Atrium's CPU per transfer ` +
      `${result.downloadServerCpuMs} ms down, ${result.uploadServerCpuMs} ms up`,
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

interface Job {
  op: "download" | "upload" | "copy" | "copy-synced";
  url?: string;
  path?: string;
  from?: string;
  to?: string;
}

interface Answer {
  seconds: number;
  status?: number;
  bytes?: number;
  text?: string;
}

interface TransferClient {
  run(job: Job): Promise<Answer>;
}

/** Forks lib/transfer-client.mjs and runs jobs one at a time. */
function startClient(): TransferClient {
  const child = forkPlainNode("transfer-client.mjs", []);
  let next = 0;
  const waiting = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  child.on("message", (message: Answer & { id: number; error?: string }) => {
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message);
  });
  child.once("exit", (code, signal) => {
    for (const waiter of waiting.values())
      waiter.reject(new Error(`the transfer client stopped (${signal ?? `code ${code}`})`));
    waiting.clear();
  });
  return {
    run: (job) =>
      new Promise<Answer>((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        child.send({ id, ...job });
      }),
  };
}

/** Forks a script of lib/ with no --import tsx (execArgv emptied), ended with the bench. */
function forkPlainNode(script: string, args: string[]): ChildProcess {
  const child = fork(join(benchDir, "lib", script), args, {
    execArgv: [],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  track({
    dispose: async () => {
      if (child.exitCode === null && child.connected) child.disconnect();
    },
    disposeNow: () => {
      child.kill();
    },
  });
  return child;
}

/** Forks lib/plain-file-server.mjs serving `path`; answers its URL once it listens. */
async function startPlainFileServer(path: string): Promise<string> {
  const child = forkPlainNode("plain-file-server.mjs", [path]);
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message: { port: number }) => resolve(message.port));
    child.once("exit", (code) => reject(new Error(`the plain file server stopped (code ${code})`)));
  });
  return `http://127.0.0.1:${port}/`;
}

/** Uploads the file; answers the new file's id and the upload's time. */
async function uploadFile(
  client: TransferClient,
  atrium: AtriumUnderTest,
  path: string,
): Promise<{ id: string; seconds: number }> {
  const url = `${atrium.base}/v1/workspaces/${atrium.workspaceId}/files?name=bench.bin`;
  const { status, text = "", seconds } = await client.run({ op: "upload", url, path });
  if (status !== 201) throw new Error(`upload: HTTP ${status}: ${text.slice(0, 300)}`);
  const meta = JSON.parse(text) as { id?: unknown; size?: unknown };
  if (typeof meta.id !== "string" || meta.size !== FILE_BYTES)
    throw new Error(`upload: the answer does not describe a ${FILE_BYTES}-byte file: ${text.slice(0, 300)}`);
  return { id: meta.id, seconds };
}

/** Reads the whole body and counts it; a short or failed download throws rather than look fast. */
async function downloadFile(
  client: TransferClient,
  atrium: AtriumUnderTest,
  fileId: string,
): Promise<number> {
  const { status, bytes, seconds } = await client.run({
    op: "download",
    url: `${atrium.base}/v1/files/${fileId}`,
  });
  if (status !== 200) throw new Error(`download: HTTP ${status}`);
  if (bytes !== FILE_BYTES) throw new Error(`download: got ${bytes} bytes of ${FILE_BYTES}`);
  return seconds;
}

async function deleteFile(atrium: AtriumUnderTest, fileId: string): Promise<void> {
  const response = await fetch(`${atrium.base}/v1/files/${fileId}`, { method: "DELETE" });
  await response.arrayBuffer();
  if (response.status !== 204) throw new Error(`delete ${fileId}: HTTP ${response.status}`);
}
