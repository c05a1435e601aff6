// A child process for test/unit/http/writable-response.test.ts: the real Node adapter serving
// responses Node cannot write, through writableResponses, with the real pino logger on stdout.
// Prints {"port": N} first so the test knows where to connect.
import { serve } from "@hono/node-server";
import { writableResponses } from "../../src/http/writable-response.ts";
import { createLogger } from "../../src/log.ts";

const RESPONSES: Record<string, () => Response> = {
  "/bad-header": () =>
    new Response("hello", {
      headers: { "content-type": "text/plain;\u0001", "x-request-id": "req-bad-header" },
    }),
  "/bad-status": () => new Response("hello", { status: 1000 }),
  "/ok": () => new Response("hello", { headers: { "content-type": "text/plain" } }),
};

const respond = (request: Request): Response =>
  (RESPONSES[new URL(request.url).pathname] ?? (() => new Response(null, { status: 404 })))();

serve(
  {
    fetch: process.env.UNGUARDED === "1" ? respond : writableResponses(respond, createLogger("info")),
    hostname: "127.0.0.1",
    port: 0,
  },
  (info) => process.stdout.write(`${JSON.stringify({ port: info.port })}\n`),
);
