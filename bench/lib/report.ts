import { cpus, loadavg } from "node:os";
import type { Outcome } from "./interleave.ts";
import type { LoadSettings } from "./load-test.ts";
import type { Era } from "./tool-call.ts";

// The shape of bench/results/latest.json: every figure the run measured, the machine it ran on,
// and the goal table judged from them (goals.ts).

/** Which comparison a load row belongs to; each is one interleaved group. */
export type LoadGroup =
  | "files-info"
  | "ping"
  | "tools-list"
  | "opening"
  | "opening-token"
  /** No baseline and no goal: shown for what it costs (bench/skills.ts). */
  | "skills-list";

export type LoadRow = {
  id: string;
  group: LoadGroup;
  /** `atrium` is the thing measured; `baseline` is what the bench runs itself to compare it with. */
  role: "atrium" | "baseline";
  label: string;
  /** Absent for a baseline that speaks no protocol (the plain hono route). */
  era?: Era;
} & Outcome;

/** A 49 MiB file through Atrium against `cp` of the same file, medians of alternating repeats. */
export interface TransferResult {
  bytes: number;
  repeats: number;
  downloadMBps: number;
  uploadMBps: number;
  /** `cp` of the same file, measured between the download and upload repeats. */
  copyMBps: number;
  /**
   * `cp` then an fsync of the copy: what a copy costs when it must survive a power loss, as an
   * upload to Atrium must (adr/0024); the upload row's baseline (adr/0063).
   */
  copySyncedMBps: number;
  /**
   * The same download from a plain node:http server piping the file (lib/plain-file-server.mjs):
   * what any Node server reaches over loopback on this machine. Shown beside the goal rows, not judged.
   */
  plainNodeDownloadMBps?: number;
  /** Atrium's CPU (user + system, all threads) per transfer, median, in ms; NaN without /proc. */
  downloadServerCpuMs?: number;
  uploadServerCpuMs?: number;
}

/** Heap of one Atrium process (in-process in a child with --expose-gc), after a full gc each time. */
export interface MemoryResult {
  workspaces: number;
  /** Heap with the workspaces on disk and loaded, none touched yet. */
  idleHeapBytes: number;
  /** After one request to each workspace. */
  touchedHeapBytes: number;
  /**
   * After the idle sweep has evicted every workspace's sources. Not swept: the catalog entries
   * each listing read (their cache has its own idle time and byte budget, adr/0179).
   */
  evictedHeapBytes: number;
  /** Workspaces with a full connections catalog (100 entries of 60 KiB), listed after the eviction. */
  fullCatalogs: number;
  /** After listing each full catalog once, within their idle time. */
  fullCatalogsHeapBytes: number;
}

export interface Machine {
  node: string;
  platform: string;
  cpus: number;
  cpuModel: string;
  loadAverageAtStart: number;
  loadAverageAtEnd?: number;
}

/** The figure `initialize` / `server/discover` reached on main before issue 15, per era. */
export interface OpeningBaseline {
  requestsPerSec: Record<Era, number>;
  serverCpuUsPerRequest: Record<Era, number>;
  measuredAt: string;
  commit: string;
  loadAverage: number;
  note: string;
}

export interface BenchReport {
  startedAt: string;
  finishedAt?: string;
  machine: Machine;
  settings: LoadSettings;
  openingBaseline: OpeningBaseline;
  loads: LoadRow[];
  transfer?: TransferResult | { error: string };
  memory?: MemoryResult | { error: string };
}

/** The load average is sampled before any server starts: the hint that other work shared the run. */
export function describeMachine(): Machine {
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    loadAverageAtStart: loadavg()[0] ?? 0,
  };
}
