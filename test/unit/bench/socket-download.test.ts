import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { download } from "../../../bench/lib/socket-download.mjs";

const servers: Server[] = [];
const requestLines: string[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))));
});

/** A raw TCP server that writes `reply` to every connection, then ends it (or, if asked, stays). */
async function serve(reply: Buffer[], options: { end: boolean } = { end: true }): Promise<string> {
  const server = createServer((socket) => {
    socket.once("data", (request: Buffer) => {
      requestLines.push(request.toString("latin1").split("\r\n")[0] ?? "");
      for (const part of reply) socket.write(part);
      if (options.end) socket.end();
    });
    socket.on("error", () => {});
  });
  servers.push(server);
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}/file?x=1`;
}

const head = (status: string, headers: string) => Buffer.from(`HTTP/1.1 ${status}\r\n${headers}\r\n\r\n`);

describe("download (the transfer bench's client)", () => {
  it("counts a body as it arrives, headers split across reads included", async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 7, 1);
    const headers = [
      Buffer.from("HTTP/1.1 200 OK\r\nContent-"),
      Buffer.from(`Length: ${body.length}\r\n\r\n`),
    ];
    const url = await serve([...headers, body], { end: false });
    expect(await download(url, 5_000)).toEqual({ status: 200, bytes: body.length });
    expect(requestLines.at(-1)).toBe("GET /file?x=1 HTTP/1.1");
  });

  it("reports a body cut short by the server as the bytes that came", async () => {
    const url = await serve([head("200 OK", "Content-Length: 1000"), Buffer.alloc(400)]);
    expect(await download(url, 5_000)).toEqual({ status: 200, bytes: 400 });
  });

  it("reports the status of an error answer", async () => {
    const url = await serve([head("404 Not Found", "Content-Length: 2"), Buffer.from("no")]);
    expect(await download(url, 5_000)).toEqual({ status: 404, bytes: 2 });
  });

  it("refuses an answer without a Content-Length", async () => {
    const url = await serve([head("200 OK", "Transfer-Encoding: chunked"), Buffer.from("0\r\n\r\n")]);
    await expect(download(url, 5_000)).rejects.toThrow(/without a Content-Length/);
  });

  it("gives up on a server that never answers", async () => {
    const url = await serve([], { end: false });
    await expect(download(url, 200)).rejects.toThrow(/no answer in 200 ms/);
  });
});
