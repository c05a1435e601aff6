import { rm } from "node:fs/promises";
import type { Logger } from "../../src/log.ts";
import { startTestAtrium, type TestAtrium } from "./atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "./credential-key.ts";
import type { FakeTime } from "./fake-time.ts";

/**
 * The Atrium the connection tests share: on a keyed temp dir (so connections can seal what they
 * are given), on `time`'s clock and timers, logging to `log`, allowed to reach servers on
 * 127.0.0.1, with any other `connections` settings laid over that. The caller removes
 * `instance.dir` when done.
 */
export async function startConnectionsAtrium(
  prefix: string,
  time: FakeTime,
  log: Logger,
  connections: Record<string, unknown> = {},
  /** Other sections of instance.json (e.g. `storage` with a retention). */
  sections: Record<string, unknown> = {},
): Promise<TestAtrium> {
  const dir = await keyedDir(prefix);
  try {
    return await startTestAtrium({
      dir,
      clock: time.clock,
      timers: time.timers,
      log,
      sections: {
        credentials: CREDENTIALS_SECTION,
        connections: { allowPrivateAddresses: true, ...connections },
        ...sections,
      },
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
