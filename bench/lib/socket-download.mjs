// A download as a client that only counts the bytes reads it: the transfer part's client
// (transfer-client.mjs) times Atrium's downloads and the plain server's with it. Plain JavaScript
// because that client runs without tsx.
import { connect } from "node:net";

const READ_BUFFER_BYTES = 1024 * 1024;

/**
 * GET over a socket of its own (`Connection: close`), as `curl -o /dev/null` reads it but with no
 * process to start: the status line and headers are parsed, then the body's bytes are counted,
 * never copied or kept. Only a response with a `Content-Length` is accepted (Atrium's downloads
 * and the plain server's have one); the answer is its status and the bytes that arrived.
 */
export function download(url, timeoutMs) {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    let status = 0;
    let length = -1;
    let bytes = 0;
    let settled = false;
    const settle = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve({ status, bytes });
    };
    // Every read lands in this one buffer (`onread`): nothing is allocated per chunk.
    const socket = connect({
      port: Number(port),
      host: hostname,
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (size, buffer) => {
          if (length >= 0) {
            bytes += size;
            if (bytes >= length) settle();
            return;
          }
          head = Buffer.concat([head, buffer.subarray(0, size)]);
          const end = head.indexOf("\r\n\r\n");
          if (end === -1) return;
          const lines = head.subarray(0, end).toString("latin1").split("\r\n");
          status = Number(lines[0]?.split(" ")[1]);
          const declared = lines.find((line) => /^content-length:/i.test(line));
          if (declared === undefined) {
            settle(new Error(`GET ${url}: HTTP ${status} without a Content-Length`));
            return;
          }
          length = Number(declared.slice(declared.indexOf(":") + 1).trim());
          bytes = head.length - end - 4;
          if (bytes >= length) settle();
        },
      },
    });
    const timer = setTimeout(() => settle(new Error(`GET ${url}: no answer in ${timeoutMs} ms`)), timeoutMs);
    socket.once("end", () => settle());
    socket.once("error", settle);
    socket.write(
      `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n`,
    );
  });
}
