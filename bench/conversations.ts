// Conversations at scale (issue 14): with 10,000 conversations in one owner's partition, how fast
// appends and lists go, what a search costs, and what the index costs to load from its snapshot
// and to rebuild without one (adr/0046); then what one page of a 16 MiB conversation costs
// (adr/0096). In-process against the store on a real temp root, so the numbers are the store's and
// the disk's, not HTTP's. `npm run bench -- conversations`; CONVERSATIONS sets the count (default
// 10,000).
import { mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createLogger } from "../src/log.ts";
import { ConversationIndexes, SNAPSHOT_FILE } from "../src/platform/conversations/conversation-indexes.ts";
import { listConversations, searchConversations } from "../src/platform/conversations/finder.ts";
import type { EventDraft } from "../src/platform/conversations/model.ts";
import { ConversationStore } from "../src/platform/conversations/store.ts";
import { mapBounded } from "../src/storage/bounded.ts";
import { StorageLayout } from "../src/storage/paths.ts";
import { NO_CALLER } from "../src/workspace/access-check.ts";
import { release } from "./lib/cleanup.ts";
import { percentile } from "./lib/percentile.ts";
import { progress } from "./lib/progress.ts";
import { makeTempDir } from "./lib/temp-dir.ts";

const WORKSPACE = "ws_00000000000000c0";
const OWNER = `usr_${"0".repeat(23)}1`;
const MESSAGES_PER_CONVERSATION = 10;
const APPENDS = 2000;
const LISTS = 1000;
const SEARCHES = 200;
const CREATES_IN_FLIGHT = 16;
/** The large conversation a page is read from: appends of this many messages up to this size. */
const LARGE_LOG_BYTES = 16 * 1024 * 1024;
const LARGE_LOG_APPEND = 500;
const PAGE_READS = 50;

export interface ConversationsBench {
  conversations: number;
  createPerSec: number;
  appendPerSec: { sequential: number; concurrent16: number };
  appendP50Ms: number;
  appendP99Ms: number;
  listFirstPagePerSec: number;
  listAllPagesMs: number;
  searchRareP50Ms: number;
  searchCommonP50Ms: number;
  snapshotSaveMs: number;
  snapshotMB: number;
  loadFromSnapshotMs: number;
  rebuildWithoutSnapshotMs: number;
  heapMB: number;
  /** CPU ms of a newest page of 100 of a 16 MiB log: the first read in a process, then the median. */
  largePageFirstCpuMs: number;
  largePageCpuMs: number;
}

// A small vocabulary, skewed like real text: a few words everywhere, most words rare.
const VOCABULARY = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
let seed = 1;
const random = () => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};
const sentence = () =>
  Array.from({ length: 30 }, () => VOCABULARY[Math.floor(random() ** 2 * VOCABULARY.length)]).join(" ");
const message = (words: string): EventDraft => ({
  type: "message",
  role: "user",
  content: [{ type: "text", text: words }],
});

/** A store as the app builds it, with timers that never fire: the bench saves the snapshot itself. */
function openStore(root: string): ConversationStore {
  const storage = new StorageLayout(root).partition("conversations");
  const log = createLogger("silent");
  const indexes = new ConversationIndexes(storage, { after: () => () => undefined }, log);
  const limits = { maxEventBytes: 256 * 1024, maxConversationBytes: 16 * 1024 * 1024 };
  return new ConversationStore(
    storage,
    limits,
    indexes,
    { publish: () => undefined },
    Date.now,
    async () => true,
  );
}

const perSec = (count: number, ms: number) => Math.round((count / ms) * 1000);
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * CPU time of `get`'s newest page of 100 of a log of LARGE_LOG_BYTES written by appends: the first
 * read by a new store (it reads the log whole, for its head), then the median of PAGE_READS more.
 */
async function pageOfLargeLog(root: string): Promise<{ first: number; median: number }> {
  let store = openStore(root);
  const { id } = await store.create(WORKSPACE, OWNER, "large", undefined, NO_CALLER);
  const log = join(root, WORKSPACE, "conversations", OWNER, `${id}.jsonl`);
  while ((await stat(log)).size < LARGE_LOG_BYTES - 512 * 1024) {
    const drafts = Array.from({ length: LARGE_LOG_APPEND }, () => message(sentence()));
    await store.append(WORKSPACE, OWNER, id, drafts, NO_CALLER);
  }
  store = openStore(root);
  const page = () => store.get(WORKSPACE, OWNER, id, { order: "newest", limit: 100 });
  let started = cpuMs();
  await page();
  const first = cpuMs() - started;
  const samples: number[] = [];
  for (let i = 0; i < PAGE_READS; i++) {
    started = cpuMs();
    await page();
    samples.push(cpuMs() - started);
  }
  return { first, median: p(samples, 50) };
}
const p = (samples: number[], q: number) => percentile(Float64Array.from(samples).sort(), q);

export async function runConversationsBench(
  count = Number(process.env.CONVERSATIONS ?? 10_000),
): Promise<ConversationsBench> {
  const dir = await makeTempDir("atrium-bench-conversations");
  try {
    const root = dir.path;
    await mkdir(join(root, WORKSPACE), { mode: 0o700 });
    let store = openStore(root);

    progress(`conversations: creating ${count} with ${MESSAGES_PER_CONVERSATION} messages each`);
    let started = performance.now();
    const ids = await mapBounded(
      Array.from({ length: count }, (_, i) => i),
      CREATES_IN_FLIGHT,
      async (i) => {
        const events = Array.from({ length: MESSAGES_PER_CONVERSATION }, () => message(sentence()));
        return (await store.create(WORKSPACE, OWNER, `conversation ${i}`, events, NO_CALLER)).id;
      },
    );
    const createPerSec = perSec(count, performance.now() - started);

    progress(`conversations: ${APPENDS} appends one at a time, then ${APPENDS} sixteen at a time`);
    const pick = () => ids[Math.floor(random() * ids.length)] as string;
    const latencies: number[] = [];
    started = performance.now();
    for (let i = 0; i < APPENDS; i++) {
      const t = performance.now();
      await store.append(WORKSPACE, OWNER, pick(), [message(sentence())], NO_CALLER);
      latencies.push(performance.now() - t);
    }
    const sequential = perSec(APPENDS, performance.now() - started);
    started = performance.now();
    await mapBounded(
      Array.from({ length: APPENDS }, (_, i) => i),
      16,
      () => store.append(WORKSPACE, OWNER, pick(), [message(sentence())], NO_CALLER),
    );
    const concurrent16 = perSec(APPENDS, performance.now() - started);

    progress("conversations: list and search");
    started = performance.now();
    for (let i = 0; i < LISTS; i++) await listConversations(store.indexes, WORKSPACE, OWNER, {});
    const listFirstPagePerSec = perSec(LISTS, performance.now() - started);
    started = performance.now();
    let cursor: string | undefined;
    do {
      cursor = (await listConversations(store.indexes, WORKSPACE, OWNER, { cursor, limit: 1000 })).nextCursor;
    } while (cursor);
    const listAllPagesMs = performance.now() - started;
    const searchTimes = async (query: string) => {
      const samples: number[] = [];
      for (let i = 0; i < SEARCHES; i++) {
        const t = performance.now();
        await searchConversations(store.indexes, store, WORKSPACE, OWNER, { query });
        samples.push(performance.now() - t);
      }
      return p(samples, 50);
    };
    const searchRareP50Ms = await searchTimes(VOCABULARY[VOCABULARY.length - 1] as string);
    const searchCommonP50Ms = await searchTimes(VOCABULARY[0] as string);
    global.gc?.();
    const heapMB = Math.round(process.memoryUsage().heapUsed / 1e6);

    progress("conversations: snapshot save, load and rebuild");
    started = performance.now();
    await store.indexes.flush();
    const snapshotSaveMs = performance.now() - started;
    const snapshot = join(root, WORKSPACE, "conversations", OWNER, SNAPSHOT_FILE);
    const snapshotMB = (await stat(snapshot)).size / 1e6;
    store = openStore(root);
    started = performance.now();
    await listConversations(store.indexes, WORKSPACE, OWNER, {});
    const loadFromSnapshotMs = performance.now() - started;
    await rm(snapshot);
    store = openStore(root);
    started = performance.now();
    await listConversations(store.indexes, WORKSPACE, OWNER, {});
    const rebuildWithoutSnapshotMs = performance.now() - started;

    progress("conversations: a page of a 16 MiB conversation");
    const largePage = await pageOfLargeLog(root);

    return {
      conversations: count,
      createPerSec,
      appendPerSec: { sequential, concurrent16 },
      appendP50Ms: p(latencies, 50),
      appendP99Ms: p(latencies, 99),
      listFirstPagePerSec,
      listAllPagesMs,
      searchRareP50Ms,
      searchCommonP50Ms,
      snapshotSaveMs,
      snapshotMB,
      loadFromSnapshotMs,
      rebuildWithoutSnapshotMs,
      heapMB,
      largePageFirstCpuMs: largePage.first,
      largePageCpuMs: largePage.median,
    };
  } finally {
    await release(dir);
  }
}

export function formatConversations(r: ConversationsBench): string {
  const rows: Array<[string, string]> = [
    ["conversations (10 messages each)", String(r.conversations)],
    ["create, per s (16 in flight)", String(r.createPerSec)],
    ["append one message, per s (one at a time)", String(r.appendPerSec.sequential)],
    ["append one message, per s (16 in flight)", String(r.appendPerSec.concurrent16)],
    ["append latency p50 / p99, ms", `${r.appendP50Ms.toFixed(2)} / ${r.appendP99Ms.toFixed(2)}`],
    ["list first page (50), per s", String(r.listFirstPagePerSec)],
    [`list all ${r.conversations} in pages of 1000, ms`, r.listAllPagesMs.toFixed(1)],
    [
      "search a rare word / a common word, p50 ms",
      `${r.searchRareP50Ms.toFixed(2)} / ${r.searchCommonP50Ms.toFixed(2)}`,
    ],
    ["index snapshot: save ms, size MB", `${r.snapshotSaveMs.toFixed(0)}, ${r.snapshotMB.toFixed(1)}`],
    ["first list after a restart: from the snapshot, ms", r.loadFromSnapshotMs.toFixed(0)],
    ["first list after a restart: no snapshot (rebuild), ms", r.rebuildWithoutSnapshotMs.toFixed(0)],
    ["heap after the run, MB", String(r.heapMB)],
    [
      "newest page of 100 of a 16 MiB log, CPU ms: first read / then (p50)",
      `${r.largePageFirstCpuMs.toFixed(0)} / ${r.largePageCpuMs.toFixed(2)}`,
    ],
  ];
  return `${["| conversations | |", "|---|---|", ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join("\n")}\n`;
}
