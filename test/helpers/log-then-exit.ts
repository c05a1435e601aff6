// A process that logs through Atrium's default (asynchronous) destination and then ends at
// once, as `process.argv[2]` says: test/unit/log-exit.test.ts counts the lines that reached stdout.
import { createLogger, flushLog } from "../../src/log.ts";

const LINES = 2000;
const log = createLogger("info");
for (let index = 0; index < LINES; index += 1)
  log.info({ requestId: `r-${index}`, token: "sekrit" }, "request");

const how = process.argv[2];
if (how === "exit") process.exit(3);
if (how === "throw") throw new Error("fatal on purpose");
if (how === "flush") await flushLog(log);
