// The transfer part's client, in its own plain Node process (forked by bench/transfer.ts with no
// --import tsx): it times each download, upload and `cp` it is asked for and answers over IPC.
// Why a separate process: in the bench's own process (tsx loaded, a larger heap), node:http cost
// 130-160 ms of CPU per 49 MiB download, much of it garbage collection of the HTTP parser's copy
// of each body chunk; the client, not Atrium, set the download's figure. cp is timed here too, so
// all three are timed alike, from one small process. For the same reason a download is read from
// a plain socket into one reused buffer (socket-download.mjs): through node:http, even in this
// process, the parser's copies held every server, Atrium or the plain one, to about 1 GB/s.
// Plain JavaScript because it runs without tsx.
import { spawn } from "node:child_process";
import { open, readFile } from "node:fs/promises";
import { request } from "node:http";
import { performance } from "node:perf_hooks";
import { download } from "./socket-download.mjs";

const TIMEOUT_MS = 120_000;
/** The bytes each upload sends, read once per path: the upload sends from memory. */
const bodies = new Map();

/**
 * An upload with node:http, the body sent from memory in one write; answers the status, the
 * answer's length and its text (an error, or the new file's metadata).
 */
function upload(url, body) {
  return new Promise((resolve, reject) => {
    const headers = { "content-type": "application/octet-stream", "content-length": String(body.length) };
    const req = request(url, { method: "POST", headers, timeout: TIMEOUT_MS }, (response) => {
      let bytes = 0;
      const text = [];
      response.on("data", (chunk) => {
        bytes += chunk.length;
        if (bytes <= 64 * 1024) text.push(chunk);
      });
      response.once("end", () =>
        resolve({ status: response.statusCode ?? 0, bytes, text: Buffer.concat(text).toString() }),
      );
      response.once("error", reject);
    });
    req.once("timeout", () => req.destroy(new Error(`POST ${url}: no answer in ${TIMEOUT_MS} ms`)));
    req.once("error", reject);
    req.end(body);
  });
}

function copy(from, to) {
  return new Promise((resolve, reject) => {
    const child = spawn("cp", [from, to], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`cp exited with ${code}`))));
  });
}

async function fsync(path) {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Runs one timed job; the time is taken here, around the work alone. */
async function run(job) {
  if (job.op === "copy" || job.op === "copy-synced") {
    const started = performance.now();
    await copy(job.from, job.to);
    // What a copy costs when it must survive a power loss, as an upload to Atrium does.
    if (job.op === "copy-synced") await fsync(job.to);
    return { seconds: (performance.now() - started) / 1000 };
  }
  let body;
  if (job.op === "upload") {
    if (!bodies.has(job.path)) bodies.set(job.path, await readFile(job.path));
    body = bodies.get(job.path);
  }
  const started = performance.now();
  const answer = job.op === "upload" ? await upload(job.url, body) : await download(job.url, TIMEOUT_MS);
  return { seconds: (performance.now() - started) / 1000, ...answer };
}

process.on("message", (job) => {
  run(job).then(
    (result) => process.send({ id: job.id, ...result }),
    (error) => process.send({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
// The bench ends this process by closing the channel (or by dying).
process.on("disconnect", () => process.exit(0));
