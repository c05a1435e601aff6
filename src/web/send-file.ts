import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";

/**
 * Bytes read from disk per chunk of a download: fewer, larger writes to the socket than the
 * 64 KiB default: 1 MiB took a 49 MiB download from 17% to 110% of cp's time on one test machine (issue 15).
 */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Answers with an open file's bytes, then closes it. Under Node, the file's read stream is piped
 * straight to the socket: no web `ReadableStream` in between, no copy of a chunk (test/integration/files-streams.test.ts).
 * Headers set by middleware before the route (the request id) go out with the file's own.
 * Without Node's response (a test calling `app.request`) it is an ordinary streamed `Response`;
 * a HEAD reads nothing.
 */
export function sendFile(c: Context, content: FileHandle, headers: Record<string, string>): Response {
  if (c.req.method === "HEAD") {
    void content.close();
    return new Response(null, { headers });
  }
  const body = content.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
  const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
  if (outgoing === undefined) {
    return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, { headers });
  }
  c.res.headers.forEach((value, name) => {
    outgoing.setHeader(name, value);
  });
  outgoing.writeHead(200, headers);
  // A client that goes away mid-download ends the pipeline with an error; both ends are closed
  // by it, and there is no one left to answer.
  pipeline(body, outgoing).catch(() => undefined);
  // Tells @hono/node-server that the answer is already on its way.
  return new Response(null, { headers: RESPONSE_ALREADY_SENT.headers });
}
