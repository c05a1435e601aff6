import { once } from "node:events";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
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
});
