// The transfer part's ceiling for a download over HTTP in Node on this machine: a plain node:http
// server in its own process (forked with no --import tsx) that answers every GET with one file,
// read by createReadStream and piped to the response — no routing, authentication, hashing or
// logging. It tells the port over IPC and ends when the channel closes. Plain JavaScript because
// it runs without tsx.
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";

const path = process.argv[2];
if (!path) throw new Error("usage: plain-file-server.mjs <file>");
const size = statSync(path).size;

const server = createServer((request, response) => {
  request.resume();
  response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(size) });
  createReadStream(path, { highWaterMark: 1024 * 1024 }).pipe(response);
});
server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));
process.on("disconnect", () => process.exit(0));
