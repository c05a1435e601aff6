import { once } from "node:events";
import { createServer, request, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HttpDrain } from "../../../src/http/drain.ts";

// A connection the drain cuts off ends before its handler: the handler still unwinds (cleanup, its
// log line). The drain waits for tracked handlers, a bounded while, and not at all once forced.

let server: Server | undefined;

afterEach(() => {
  server?.closeAllConnections();
  server = undefined;
});

/** A server whose one request is never answered, its handler the promise `handler` gives. */
async function serveHanging(handler: () => Promise<void>): Promise<HttpDrain> {
  server = createServer();
  const drain = new HttpDrain(server);
  const arrived = once(server, "request");
  server.on("request", () => drain.track(handler()));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  request({ host: "127.0.0.1", port, method: "POST", path: "/" })
    .on("error", () => undefined)
    .write("never ends");
  await arrived;
  return drain;
}

describe("HttpDrain", () => {
  it("waits for a handler that unwinds after its connection was cut off", async () => {
    const steps: string[] = [];
    let unwind: (() => void) | undefined;
    const drain = await serveHanging(
      () =>
        new Promise<void>((resolve) => {
          unwind = () => {
            steps.push("handler ended");
            resolve();
          };
        }),
    );
    server?.once("close", () => setTimeout(() => unwind?.(), 100));
    const counts = await drain.drain(50);
    steps.push("drain ended");
    expect(counts).toMatchObject({ inFlight: 1, forced: 1 });
    expect(steps).toEqual(["handler ended", "drain ended"]);
  });

  it("stops waiting for a handler that never ends when forced", async () => {
    const drain = await serveHanging(() => new Promise<void>(() => undefined));
    const drained = drain.drain(50);
    // Past the cut-off, the drain is waiting on the handler alone.
    await new Promise((resolve) => setTimeout(resolve, 300));
    drain.force();
    // Well before the drain's own bound on unwinding (5 s), which is what a force skips.
    const stillWaiting = new Promise((resolve) => setTimeout(() => resolve("still waiting"), 2000));
    expect(await Promise.race([drained, stillWaiting])).toMatchObject({ inFlight: 1, forced: 1 });
  });

  it("ends a streamed answer's connection once it finishes, but not under a request pipelined behind it", async () => {
    server = createServer();
    const drain = new HttpDrain(server);
    const responses = new Map<string, ServerResponse>();
    const both = new Promise<void>((resolve) => {
      server?.on("request", (req, res) => {
        responses.set(req.url ?? "", res);
        if (req.url === "/stream") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write("data: 1\n\n");
        }
        if (responses.size === 2) resolve();
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
    });
    const closed = once(socket, "close");
    socket.write("GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n");
    await both;
    const drained = drain.drain(10_000);
    const stream = responses.get("/stream") as ServerResponse;
    stream.end("data: 2\n\n");
    await once(stream, "finish");
    await new Promise((resolve) => setImmediate(resolve));
    (responses.get("/next") as ServerResponse).end("the next answer");
    // Its connection ends after the answer behind the stream, which says Connection: close.
    await closed;
    expect(received).toContain("the next answer");
    expect(await drained).toMatchObject({ inFlight: 2, forced: 0 });
  });

  it("closes a streamed answer's connection once it is out, though its client keeps its half open", async () => {
    server = createServer();
    const drain = new HttpDrain(server);
    let stream: ServerResponse | undefined;
    const started = new Promise<void>((resolve) => {
      server?.on("request", (_request, response) => {
        stream = response;
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write("data: 1\n\n");
        resolve();
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const socket = connect({
      port: (server.address() as AddressInfo).port,
      host: "127.0.0.1",
      allowHalfOpen: true,
    });
    socket.on("data", () => undefined);
    socket.write("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    await started;
    // A deadline no test waits for: the drain must end when the connection does.
    const drained = drain.drain(600_000);
    stream?.end("data: end\n\n");
    expect(await drained).toMatchObject({ inFlight: 1, finished: 1, forced: 0 });
    socket.destroy();
  });
});
