import { startTestAtrium, type TestAtrium, type TestAtriumOptions } from "./atrium.ts";
import { FakeTime } from "./fake-time.ts";

export const HOUR_MS = 60 * 60 * 1000;

/** A real Atrium whose clock and timers the test moves by hand, starting at `startIso`. */
export async function startFakeTimeAtrium(
  startIso: string,
  options: TestAtriumOptions = {},
): Promise<{ time: FakeTime; t: TestAtrium }> {
  const time = new FakeTime(Date.parse(startIso));
  const t = await startTestAtrium({ ...options, clock: time.clock, timers: time.timers });
  return { time, t };
}
