import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { WrittenNotFlushed } from "../../../src/storage/atomic.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// A put renames its record into place, then flushes the folder. When only that flush fails, the
// caller is told one of two things and the disk agrees with it (ADR 0166, amended 2026-12-07).

const FIRST = "sess_0123456789abcdef";
const SECOND = "sess_fedcba9876543210";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let root: string;
let records: JsonRecords<{ n: number }>;
let folder: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-records-unflushed-"));
  const layout = new StorageLayout(root);
  records = new JsonRecords(layout, "sessions");
  folder = layout.collectionDir("sessions");
  await records.put(FIRST, { n: 1 });
});

afterEach(() => rm(root, { recursive: true, force: true }));

const folderFlushFails = (work: () => Promise<unknown>) =>
  journalDuring(work, { sync: (path) => (path === folder ? eio() : undefined) });

it("an overwrite whose folder's flush fails is done: it returns, and every reader sees the new record", async () => {
  await folderFlushFails(() => records.put(FIRST, { n: 2 }));
  expect(await records.get(FIRST)).toEqual({ n: 2 });
});

it("a create whose folder's flush fails is undone: it throws the flush's error and leaves no file", async () => {
  let refusal: unknown;
  await folderFlushFails(() =>
    records.put(SECOND, { n: 1 }).catch((error: unknown) => {
      refusal = error;
    }),
  );
  expect(refusal).toMatchObject({ code: "EIO" });
  expect(refusal).not.toBeInstanceOf(WrittenNotFlushed);
  expect(await records.ids()).toEqual([FIRST]);
  expect(await readdir(folder)).toEqual([`${FIRST}.json`]);
});
