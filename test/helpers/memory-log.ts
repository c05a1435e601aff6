import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/log.ts";

/** A real pino logger whose lines a test reads back, parsed. */
export function memoryLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n"))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger("info", stream), lines };
}
