import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { JsonRecords } from "../../../src/storage/records.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// An instance-wide record is acknowledged only once a power loss cannot undo it (adr/0024): a
// deleted session, credential or invitation, or a spent OAuth code, must not come back.

const SESSION = "sess_0123456789abcdef";

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-records-"));
  layout = new StorageLayout(root);
});

afterEach(() => rm(root, { recursive: true, force: true }));

describe("JsonRecords", () => {
  it("a put on a new root flushes the root found there and each folder it makes in its parent, and the record in its folder", async () => {
    const schedules = new JsonRecords<{ n: number }>(layout, "tasks/schedules");
    const journal = await journalDuring(() => schedules.put("entry-01", { n: 1 }));
    const instance = layout.instanceDir();
    const folder = layout.collectionDir("tasks/schedules");
    expect(journal.entries.filter((entry) => entry.op === "mkdir")).toHaveLength(3);
    expect(journal.unflushedFolders()).toEqual([]);
    expect(journal.synced.slice(0, 4)).toEqual([dirname(root), root, instance, join(instance, "tasks")]);
    expect(journal.synced.at(-1)).toBe(folder);
    expect(await schedules.get("entry-01")).toEqual({ n: 1 });
  });

  it("a put into an existing folder makes no folder and flushes the record's folder last", async () => {
    const sessions = new JsonRecords<{ n: number }>(layout, "sessions");
    await sessions.put(SESSION, { n: 1 });
    const journal = await journalDuring(() => sessions.put(SESSION, { n: 2 }));
    expect(journal.entries.filter((entry) => entry.op === "mkdir")).toEqual([]);
    expect(journal.synced).toHaveLength(2); // the temp file, then the folder once it is renamed
    expect(journal.synced.at(-1)).toBe(layout.collectionDir("sessions"));
  });

  it("a delete is flushed in the collection's folder before it returns", async () => {
    const sessions = new JsonRecords<{ n: number }>(layout, "sessions");
    await sessions.put(SESSION, { n: 1 });
    const journal = await journalDuring(() => sessions.delete(SESSION));
    expect(journal.synced).toEqual([layout.collectionDir("sessions")]);
    expect(await sessions.get(SESSION)).toBeUndefined();
    expect(await readdir(layout.collectionDir("sessions"))).toEqual([]);
  });

  it("deleting a record that is not there, or from a collection never written, is no error", async () => {
    const sessions = new JsonRecords<{ n: number }>(layout, "sessions");
    await sessions.delete(SESSION);
    await sessions.put(SESSION, { n: 1 });
    await sessions.delete("sess_fedcba9876543210");
    expect(await sessions.ids()).toEqual([SESSION]);
  });
});
