import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";

/** How long a connection keeps reading, and discarding, a refused body after the answer. */
const LINGER_MS = 5_000;

type ClosableSocket = Socket & { destroySoon?: () => void };

const lingering = new WeakSet<Socket>();

/**
 * Ends the connection after this answer without losing the answer. A refused body (a 413)
 * is still arriving when the answer is sent. Node ends a `Connection: close` response with
 * `socket.destroySoon()`: FIN, then the descriptor is closed at once, so the bytes the client
 * is still sending meet a closed socket, the kernel answers them with a reset, and a client
 * that had not yet read the answer loses it (Linux drops received data on a reset; the client
 * sees EPIPE or ECONNRESET instead of the 413). Instead, this connection half-closes after the
 * answer and keeps reading and discarding until the client stops sending, or for LINGER_MS at
 * most — the lingering close Apache and nginx do (test/integration/body-limit.test.ts).
 */
export function closeAfterAnswer(c: Context): void {
  c.header("connection", "close");
  lingerAfterAnswer((c.env as Partial<HttpBindings> | undefined)?.incoming);
}

/**
 * The socket half of closeAfterAnswer, for a request answered straight from Node's `request`
 * event (http/mcp-front-door.ts), whose answer says `Connection: close` itself.
 */
export function lingerAfterAnswer(incoming: IncomingMessage | undefined): void {
  const socket = incoming?.socket as ClosableSocket | undefined;
  if (incoming === undefined || socket === undefined || lingering.has(socket)) return;
  lingering.add(socket);
  // Node's http server and the hono adapter both end a connection through destroySoon.
  socket.destroySoon = () => linger(socket, incoming);
}

function linger(socket: Socket, incoming: Readable): void {
  if (socket.destroyed || socket.writableEnded) return;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  // The socket belongs to Node's HTTP parser, which reads only while the request's body is
  // being consumed: reading the unwanted body is what keeps the bytes coming off the wire.
  incoming.on("data", discard);
  incoming.resume();
  // Once the client has sent everything and read the answer it closes its side; ours is
  // ended already, so the connection is done.
  socket.once("end", () => socket.destroy());
  socket.end();
}

function discard(): void {}
