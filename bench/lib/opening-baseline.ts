import type { OpeningBaseline } from "./report.ts";

// Issue 15 asks for initialize / server/discover at 5× what main served before the work began.
// That code is gone once the work lands, so the figure cannot run alongside: it was measured
// with this bench's own rows (9 skills, 16 connections, dev, 2 s warm-up + 10 s in 4
// interleaved rounds, beside the token rows) in a whole `npm run bench` on main's code at the
// commit below, started on a quiet machine, and is copied into every latest.json. Server CPU
// per request is recorded too: it moves much less with load than requests/s does. (A first
// measurement at load average 13 gave 166 and 235 requests/s: too low to judge 5× against.)
export const OPENING_BASELINE: OpeningBaseline = {
  requestsPerSec: { "2025-11-25": 334, "2026-07-28": 391 },
  serverCpuUsPerRequest: { "2025-11-25": 3130, "2026-07-28": 2763 },
  measuredAt: "2026-12-03T19:16Z",
  commit: "2379b1f",
  loadAverage: 0.98,
  note:
    "Whole `npm run bench` on 2379b1f's code, load average 0.98 at start and 4.6 at end of the goal rows; " +
    "the project's earlier note said ≈ 540/s. Re-measure with `npm run bench -- opening` on a checkout of 2379b1f.",
};
