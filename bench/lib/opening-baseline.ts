import type { OpeningBaseline } from "./report.ts";

// Issue 15 asks for initialize / server/discover at 5× what main served before the work began.
// That code is gone once the work lands, so the figure cannot run alongside: it was measured
// once with this bench's own rows (`npm run bench -- opening`: 9 skills, 16 connections, dev,
// 2 s warm-up + 12 s in 4 interleaved rounds) on main at the commit below, and is copied into
// every latest.json. The machine was far from quiet then, so the server CPU per request is
// recorded too: it moves much less with load than requests/s does.
export const OPENING_BASELINE: OpeningBaseline = {
  requestsPerSec: { "2025-11-25": 166, "2026-07-28": 235 },
  serverCpuUsPerRequest: { "2025-11-25": 2878, "2026-07-28": 2791 },
  measuredAt: "2026-12-03T18:28Z",
  commit: "2379b1f",
  loadAverage: 13.3,
  note:
    "Measured at load average 13 on the shared 2-core machine (the project's earlier note says ≈ 540/s quiet); " +
    "re-measure with `npm run bench -- opening` on a checkout of 2379b1f when the machine is quiet.",
};
