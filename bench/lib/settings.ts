import type { LoadSettings } from "./load-test.ts";

// 16 connections keeps both cores busy without turning the run into a queueing test; the short
// warm-up gets the JIT and the file cache hot before anything is recorded.
const CONNECTIONS = 16;
const WARMUP_SECONDS = 2;
const DEFAULT_SECONDS = 10;

export function readLoadSettings(env: NodeJS.ProcessEnv = process.env): LoadSettings {
  const raw = env.BENCH_SECONDS;
  const seconds = raw === undefined || raw === "" ? DEFAULT_SECONDS : Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new Error(`BENCH_SECONDS must be a positive number, got "${raw}"`);
  return { connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS, seconds };
}
