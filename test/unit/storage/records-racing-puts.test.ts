import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { TEMP_PREFIX } from "../../../src/storage/atomic.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// Two puts of one id that nothing serialises, one of them meeting a failing folder flush: the
// one answered as stored stays stored (ADR 0166, amended 2026-12-07, "an undo removes only its
// own write"). A create once decided by a look before its write and undone by an unconditional
// remove took away a record another put had stored and answered as done (review58).

const ID = "sess_0123456789abcdef";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let root: string;
let records: JsonRecords<{ by: string }>;
let folder: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-records-racing-"));
  const layout = new StorageLayout(root);
  records = new JsonRecords(layout, "sessions");
  folder = layout.collectionDir("sessions");
});

afterEach(() => rm(root, { recursive: true, force: true }));

/** A promise and the function that settles it: where a test holds a flush, and learns it was reached. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const settle = (put: Promise<void>) =>
  put.then(
    () => "stored",
    (error: { code?: string }) => `refused ${error.code}`,
  );

it("a create whose flush fails leaves the record another put stored over it meanwhile", async () => {
  const firstFlushReached = gate();
  const firstFlushFails = gate<Error>();
  let folderFlushes = 0;
  const outcomes: string[] = [];
  await journalDuring(
    async () => {
      const first = settle(records.put(ID, { by: "first" }));
      await firstFlushReached.promise;
      outcomes.push(`second ${await settle(records.put(ID, { by: "second" }))}`);
      firstFlushFails.open(eio());
      outcomes.push(`first ${await first}`);
    },
    {
      sync: (path) => {
        if (path !== folder) return undefined;
        folderFlushes += 1;
        if (folderFlushes !== 1) return undefined;
        firstFlushReached.open();
        return firstFlushFails.promise;
      },
    },
  );
  expect(outcomes).toEqual(["second stored", "first refused EIO"]);
  expect(await records.get(ID)).toEqual({ by: "second" });
});

it("of two puts that both found no record, the one stored first stays when the other's flush fails", async () => {
  // Each put's temp file is flushed before it is put in place: holding those flushes has both puts
  // look before either lands.
  const held: Array<{ open: () => void }> = [];
  const reached = [gate(), gate()];
  let folderFlushes = 0;
  const outcomes: string[] = [];
  await journalDuring(
    async () => {
      const first = settle(records.put(ID, { by: "first" }));
      await reached[0]?.promise;
      const second = settle(records.put(ID, { by: "second" }));
      await reached[1]?.promise;
      held[0]?.open();
      outcomes.push(`first ${await first}`);
      held[1]?.open();
      outcomes.push(`second ${await second}`);
    },
    {
      sync: (path) => {
        if (path.startsWith(join(folder, TEMP_PREFIX)) && held.length < 2) {
          const release = gate();
          reached[held.length]?.open();
          held.push(release);
          return release.promise.then(() => undefined);
        }
        if (path !== folder) return undefined;
        folderFlushes += 1;
        return folderFlushes === 2 ? eio() : undefined;
      },
    },
  );
  // The second found the first's record when it came to put its own in place: an overwrite that
  // landed, done. Removed as a create, it took the first's stored record with it.
  expect(outcomes).toEqual(["first stored", "second stored"]);
  expect(await records.get(ID)).toEqual({ by: "second" });
});
