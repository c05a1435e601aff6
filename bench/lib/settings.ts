import type { LoadSettings } from "./load-test.ts";

// 16 connections keeps both cores busy without turning the run into a queueing test; the short
// warm-up gets the JIT and the file cache hot before anything is recorded. Each target's
// measured seconds are split into rounds interleaved with the other targets of its comparison.
const CONNECTIONS = 16;
const WARMUP_SECONDS = 2;
const DEFAULT_SECONDS = 10;
const DEFAULT_ROUNDS = 4;
const MIN_SLICE_SECONDS = 1;

export function readLoadSettings(env: NodeJS.ProcessEnv = process.env): LoadSettings {
  const seconds = positive(env, "BENCH_SECONDS", DEFAULT_SECONDS);
  const rounds = positive(env, "BENCH_ROUNDS", DEFAULT_ROUNDS);
  if (!Number.isInteger(rounds))
    throw new Error(`BENCH_ROUNDS must be a whole number, got "${env.BENCH_ROUNDS}"`);
  // A slice shorter than a second is mostly ramp-up and the answers still in flight at its end.
  const slices = Math.max(1, Math.min(rounds, Math.floor(seconds / MIN_SLICE_SECONDS)));
  return { connections: CONNECTIONS, warmupSeconds: WARMUP_SECONDS, seconds, rounds: slices };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}
