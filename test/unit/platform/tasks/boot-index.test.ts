import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { TaskBootIndex } from "../../../../src/platform/tasks/boot-index.ts";
import { TEMP_PREFIX } from "../../../../src/storage/atomic.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";

// Every run start of a workspace calls markRunning before any lock of its own (TaskStore.createRun).
// Two starts that both wrote the mark raced one put's undo against the other's stored mark, and a
// crash then left that workspace's `running` runs unrecorded until its first use (review58).

const WS = "ws_0123456789abcdef";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let root: string;
let layout: StorageLayout;
let folder: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-boot-index-"));
  layout = new StorageLayout(root);
  folder = layout.collectionDir("tasks/running");
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** Holds the first flush of the running marks' folder until `release` answers it (an error fails it). */
function holdFirstMarkFlush() {
  let reached!: () => void;
  const flushReached = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let release!: (fault: Error | undefined) => void;
  const released = new Promise<Error | undefined>((resolve) => {
    release = resolve;
  });
  let flushes = 0;
  const sync = (path: string) => {
    if (path !== folder) return undefined;
    flushes += 1;
    if (flushes !== 1) return undefined;
    reached();
    return released;
  };
  return { flushReached, release, sync };
}

it("two run starts in one workspace write its mark once", async () => {
  const index = new TaskBootIndex(layout);
  const held = holdFirstMarkFlush();
  const journal = await journalDuring(
    async () => {
      const first = index.markRunning(WS);
      await held.flushReached;
      const second = index.markRunning(WS);
      held.release(undefined);
      await Promise.all([first, second]);
    },
    { sync: held.sync },
  );
  const markWrites = journal.synced.filter((path) => path.startsWith(join(folder, TEMP_PREFIX)));
  expect(markWrites).toHaveLength(1);
  expect(await index.runningMarks()).toEqual([WS]);
});

// Turns, not a shared outcome: a start that waited behind one refused writes the mark itself, and a
// crash after it finds the workspace marked.
it("a start queued behind one whose mark's flush fails writes its own mark and keeps it", async () => {
  const index = new TaskBootIndex(layout);
  const held = holdFirstMarkFlush();
  const outcomes: string[] = [];
  await journalDuring(
    async () => {
      const first = index.markRunning(WS).then(
        () => outcomes.push("first stored"),
        () => outcomes.push("first refused"),
      );
      await held.flushReached;
      const second = index.markRunning(WS).then(
        () => outcomes.push("second stored"),
        () => outcomes.push("second refused"),
      );
      held.release(eio());
      await Promise.all([first, second]);
    },
    { sync: held.sync },
  );
  expect(outcomes).toEqual(["first refused", "second stored"]);
  // The second start's run is in flight, told its mark is stored: a crash now must find the
  // workspace marked, or its `running` runs are not recorded interrupted at boot.
  expect(await index.runningMarks()).toEqual([WS]);
});
