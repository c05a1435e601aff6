import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceNotFound } from "../../../src/errors.ts";
import { OwnedRecords } from "../../../src/storage/owned-json-records.ts";
import { RecordExists, RecordFolders, sweepOwnerPartition } from "../../../src/storage/owned-records.ts";
import { InvalidPathSegment } from "../../../src/storage/paths.ts";
import { HOUSEKEEPING_TEMP_AGE_MS, RecoveryPass } from "../../../src/storage/recovery.ts";
import { listTree } from "../../helpers/fs-tree.ts";
import { gate } from "../../helpers/gate.ts";
import { openTempRoot, type TempRoot } from "../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const BOB = "usr_bbbbbbbbbbbbbbbbbbbbbbbb";
const NOTE = "nt_00000000000000000000000000000001";
const OTHER_NOTE = "nt_00000000000000000000000000000002";
const NEW_NOTE = "nt_000000000000000000000000000000c1";

interface Note {
  text: string;
  count: number;
}

let temp: TempRoot;
let ws: string;
/** Every (workspace, owner) the store asked for a folder, to show a refused call touched nothing. */
let asked: string[];
let notes: OwnedRecords<Note>;

// A partition of its own, `<ws>/notes/<owner>/`, built here as storage/paths.ts `ownerDir` would.
const notesDir = (workspaceId: string) => join(temp.layout.workspaceDir(workspaceId), "notes");

beforeEach(async () => {
  temp = await openTempRoot("owned-records", ALICE);
  ws = temp.ws;
  asked = [];
  notes = new OwnedRecords<Note>((workspaceId, ownerId) => {
    asked.push(`${workspaceId}/${ownerId}`);
    return join(notesDir(workspaceId), ownerId);
  });
});

afterEach(async () => {
  await temp.remove();
});

describe("OwnedRecords", () => {
  it("create stores the record in the owner's folder inside the workspace, and get reads it back", async () => {
    await notes.create(ws, ALICE, NOTE, { text: "hello", count: 0 });
    expect(await notes.get(ws, ALICE, NOTE)).toEqual({ text: "hello", count: 0 });
    expect(await notes.get(ws, BOB, NOTE)).toBeUndefined();
    expect(await listTree(notesDir(ws))).toEqual([`${ALICE}/`, `${ALICE}/${NOTE}.json`]);
  });

  it("create is exclusive: a taken id is refused and the first record is kept", async () => {
    await notes.create(ws, ALICE, NOTE, { text: "first", count: 0 });
    await expect(notes.create(ws, ALICE, NOTE, { text: "second", count: 0 })).rejects.toBeInstanceOf(
      RecordExists,
    );
    expect(await notes.get(ws, ALICE, NOTE)).toEqual({ text: "first", count: 0 });
  });

  it("of racing creates of one id exactly one wins, and its record is the one stored, whole", async () => {
    const texts = Array.from({ length: 8 }, (_, i) => `writer ${i} `.repeat(2000));
    const reads: Array<Note | undefined> = [];
    const reading = (async () => {
      // A part of a record would not parse, and the read would throw.
      for (let i = 0; i < 50; i++) reads.push(await notes.get(ws, ALICE, NOTE));
    })();
    const results = await Promise.allSettled(
      texts.map((text) => notes.create(ws, ALICE, NOTE, { text, count: 0 })),
    );
    await reading;
    const won = results.flatMap((result, i) => (result.status === "fulfilled" ? [i] : []));
    expect(won).toHaveLength(1);
    for (const result of results) {
      if (result.status === "rejected") expect(result.reason).toBeInstanceOf(RecordExists);
    }
    expect((await notes.get(ws, ALICE, NOTE))?.text).toBe(texts[won[0] as number]);
    // A reader saw no record or a whole one, never a part.
    for (const read of reads) if (read) expect(texts).toContain(read.text);
    expect(await readdir(join(notesDir(ws), ALICE))).toEqual([`${NOTE}.json`]);
  });

  it("a create in a workspace that is gone is WorkspaceNotFound and brings no folder back", async () => {
    const archived = "ws_00000000000000ff";
    await expect(notes.create(archived, ALICE, NOTE, { text: "x", count: 0 })).rejects.toBeInstanceOf(
      WorkspaceNotFound,
    );
    expect(existsSync(temp.layout.workspaceDir(archived))).toBe(false);
  });

  it("concurrent updates of one record lose nothing: each rereads what the last one wrote", async () => {
    await notes.create(ws, ALICE, NOTE, { text: "counter", count: 0 });
    const bump = (note: Note): Note => ({ ...note, count: note.count + 1 });
    const asyncBump = async (note: Note): Promise<Note> => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      return bump(note);
    };
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => notes.update(ws, ALICE, NOTE, i % 2 ? bump : asyncBump)),
    );
    expect(await notes.get(ws, ALICE, NOTE)).toEqual({ text: "counter", count: 40 });
    expect(await readdir(join(notesDir(ws), ALICE))).toEqual([`${NOTE}.json`]);
  });

  it("an update of a missing record writes nothing and answers undefined; a failing change writes nothing", async () => {
    expect(await notes.update(ws, ALICE, NOTE, (note) => note)).toBeUndefined();
    expect(existsSync(notesDir(ws))).toBe(false);
    await notes.create(ws, ALICE, NOTE, { text: "kept", count: 1 });
    await expect(
      notes.update(ws, ALICE, NOTE, () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(await notes.get(ws, ALICE, NOTE)).toEqual({ text: "kept", count: 1 });
  });

  it("delete removes the record; a delete of a missing id is 'gone', never an error", async () => {
    expect(await notes.delete(ws, ALICE, NOTE)).toBe("gone");
    await notes.create(ws, ALICE, NOTE, { text: "x", count: 0 });
    const outcomes = await Promise.all([notes.delete(ws, ALICE, NOTE), notes.delete(ws, ALICE, NOTE)]);
    expect(outcomes.sort()).toEqual(["gone", "removed"]);
    expect(await notes.get(ws, ALICE, NOTE)).toBeUndefined();
    // A delete racing an update never has the update write the record back.
    await notes.create(ws, ALICE, NOTE, { text: "x", count: 0 });
    const [updated, deleted] = await Promise.all([
      notes.update(ws, ALICE, NOTE, (note) => ({ ...note, count: 1 })),
      notes.delete(ws, ALICE, NOTE),
    ]);
    expect(updated?.count).toBe(1);
    expect(deleted).toBe("removed");
    expect(await notes.get(ws, ALICE, NOTE)).toBeUndefined();
  });

  it("list and ids give the owner's records only, skipping writers' temp files and strays", async () => {
    await notes.create(ws, ALICE, NOTE, { text: "one", count: 1 });
    await notes.create(ws, ALICE, OTHER_NOTE, { text: "two", count: 2 });
    await notes.create(ws, BOB, "nt_000000000000000000000000000000bb", { text: "bob's", count: 0 });
    const aliceDir = join(notesDir(ws), ALICE);
    await writeFile(join(aliceDir, `.tmp-${NOTE}.json-0a0b0c0d0e0f`), '{"text":"ha');
    await mkdir(join(aliceDir, `.tmp-deleted-${NOTE}-0a0b0c0d`));
    await writeFile(join(aliceDir, "notes.txt"), "not a record");
    await writeFile(join(aliceDir, "NT_00000000000000000000000000000003.json"), "{}");

    expect((await notes.ids(ws, ALICE)).sort()).toEqual([NOTE, OTHER_NOTE]);
    expect((await notes.list(ws, ALICE)).map((note) => note.text).sort()).toEqual(["one", "two"]);
    expect(await notes.list(ws, "usr_cccccccccccccccccccccccc")).toEqual([]);
  });

  it("a hostile workspace, owner or record id is refused before any path is built or disk touched", async () => {
    const before = await listTree(temp.root);
    const hostile: Array<[string, string, string]> = [
      [ws, ALICE, "../../workspace"],
      [ws, ALICE, `${NOTE}/..`],
      [ws, ALICE, ".tmp-nt_00000000000000000000000000000001"],
      [ws, ALICE, "NT_00000000000000000000000000000001"],
      [ws, ALICE, ""],
      [ws, "../../_instance", NOTE],
      [ws, "usr_aaaaaaaaaaaaaaaaaaaaaaaa/../..", NOTE],
      [ws, "alice@example.com", NOTE],
      ["../_instance", ALICE, NOTE],
      ["ws_00000000000000aa/..", ALICE, NOTE],
    ];
    for (const [w, owner, id] of hostile) {
      const calls = [
        () => notes.create(w, owner, id, { text: "x", count: 0 }),
        () => notes.get(w, owner, id),
        () => notes.update(w, owner, id, (note) => note),
        () => notes.delete(w, owner, id),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(InvalidPathSegment);
      if (id === NOTE) {
        await expect(notes.ids(w, owner)).rejects.toBeInstanceOf(InvalidPathSegment);
        await expect(notes.list(w, owner)).rejects.toBeInstanceOf(InvalidPathSegment);
      }
    }
    expect(asked).toEqual([]);
    expect(await listTree(temp.root)).toEqual(before);
  });
});

describe("RecordFolders", () => {
  let folders: RecordFolders;
  let parent: string;

  beforeEach(async () => {
    folders = new RecordFolders();
    parent = join(notesDir(ws), ALICE);
    await mkdir(parent, { recursive: true });
  });

  it("create renames the filled staging folder into place whole and returns what fill returned", async () => {
    const seen: string[] = [];
    const result = await folders.create(
      parent,
      NOTE,
      async (staging) => {
        await writeFile(join(staging, "a"), "A");
        await writeFile(join(staging, "b"), "B");
        return 42;
      },
      {
        commit: async (rename, filled) => {
          seen.push(`before ${filled}`);
          await rename();
          seen.push("after");
        },
        step: async (change) => {
          seen.push("step");
          await change();
        },
      },
    );
    expect(result).toBe(42);
    // The staging folder's mkdir, then the rename: each through the caller's hooks.
    expect(seen).toEqual(["step", "before 42", "after"]);
    expect(await listTree(parent)).toEqual([`${NOTE}/`, `${NOTE}/a`, `${NOTE}/b`]);
  });

  it("a failed create's cleanup and a remove's removal of the folder renamed aside are steps the caller runs", async () => {
    const seen: string[] = [];
    const watched = {
      commit: async (rename: () => Promise<void>) => {
        seen.push("commit");
        await rename();
      },
      step: async (change: () => Promise<unknown>) => {
        seen.push("step");
        await change();
      },
    };
    await expect(
      folders.create(parent, NOTE, async () => Promise.reject(new Error("disk full")), watched),
    ).rejects.toThrow("disk full");
    expect(seen).toEqual(["step", "step"]); // the staging folder made, then removed
    seen.length = 0;
    await folders.create(parent, NOTE, (staging) => writeFile(join(staging, "content"), "x"));
    expect(await folders.remove(parent, NOTE, watched)).toBe("removed");
    expect(seen).toEqual(["commit", "step"]);
    expect(await readdir(parent)).toEqual([]);
  });

  it("a failing fill leaves nothing behind, and the error is the fill's", async () => {
    const failure = new Error("disk full");
    await expect(
      folders.create(parent, NOTE, async (staging) => {
        await writeFile(join(staging, "content"), "half");
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await readdir(parent)).toEqual([]);
  });

  it("create refuses a place already taken, even by an empty folder, and leaves no staging folder", async () => {
    await mkdir(join(parent, NOTE));
    await writeFile(join(parent, NOTE, "content"), "first");
    await expect(folders.create(parent, NOTE, async () => undefined)).rejects.toBeInstanceOf(RecordExists);
    expect(await readFile(join(parent, NOTE, "content"), "utf8")).toBe("first");
    await mkdir(join(parent, OTHER_NOTE));
    await expect(folders.create(parent, OTHER_NOTE, async () => undefined)).rejects.toBeInstanceOf(
      RecordExists,
    );
    expect((await readdir(parent)).sort()).toEqual([NOTE, OTHER_NOTE]);
  });

  it("remove takes the folder out whole; removing a missing one, or one a racing remove took, is 'gone'", async () => {
    expect(await folders.remove(parent, NOTE)).toBe("gone");
    await folders.create(parent, NOTE, (staging) => writeFile(join(staging, "content"), "x"));
    const outcomes = await Promise.all([folders.remove(parent, NOTE), folders.remove(parent, NOTE)]);
    expect(outcomes.sort()).toEqual(["gone", "removed"]);
    expect(await readdir(parent)).toEqual([]);
  });

  it("a hostile folder name is refused before the folder is touched", async () => {
    for (const name of ["..", ".", "", ".tmp-x", "a/b", "../escape", "a\\b", "x\0y"]) {
      await expect(folders.create(parent, name, async () => undefined)).rejects.toBeInstanceOf(
        InvalidPathSegment,
      );
      await expect(folders.remove(parent, name)).rejects.toBeInstanceOf(InvalidPathSegment);
    }
    expect(await readdir(parent)).toEqual([]);
  });

  it("recovery removes stale staging and doomed folders and temp files, but never a live write's", async () => {
    // Left by writes that died: what R1, R3 and R4 remove.
    const stale = [
      `.tmp-${NOTE}-0a0b0c0d`,
      `.tmp-deleted-${OTHER_NOTE}-0a0b0c0d`,
      ".tmp-deleted-fl_000000000000000000000002",
    ];
    for (const name of stale) {
      await mkdir(join(parent, name));
      await writeFile(join(parent, name, "content"), "half");
    }
    await writeFile(join(parent, `.tmp-${NOTE}.json-0a0b0c0d0e0f`), "{");
    await writeFile(join(notesDir(ws), ".tmp-stray-0a0b0c0d0e0f"), "{");
    await mkdir(join(parent, OTHER_NOTE));

    // A create paused in its fill, and a remove paused after its rename: both live.
    const filling = gate();
    const fillStarted = gate();
    const creating = folders.create(parent, NEW_NOTE, async (staging) => {
      await writeFile(join(staging, "content"), "arriving");
      fillStarted.open();
      await filling.promise;
    });
    const removing = gate();
    const renamed = gate();
    const deleting = folders.remove(parent, OTHER_NOTE, {
      commit: async (rename) => {
        await rename();
        renamed.open();
        await removing.promise;
      },
      step: async (change) => {
        await change();
      },
    });
    await Promise.all([fillStarted.promise, renamed.promise]);
    const live = (await readdir(parent)).filter((name) => !stale.includes(name) && name.startsWith(".tmp-"));
    expect(live).toHaveLength(3); // the staging folder, the doomed folder, the stale temp file

    // Housekeeping, its clock read two hours on: every leftover is old enough to be nobody's.
    const pass = new RecoveryPass(false, HOUSEKEEPING_TEMP_AGE_MS, Date.now() + 2 * HOUSEKEEPING_TEMP_AGE_MS);
    const owners = await folders.recoverPartition(notesDir(ws), pass);
    expect(owners.map((owner) => owner.ownerId)).toEqual([ALICE]);
    expect(owners[0]?.entries.map((entry) => entry.name)).toEqual([]);
    const left = await readdir(parent);
    expect(left.filter((name) => stale.includes(name))).toEqual([]);
    expect(left).not.toContain(`.tmp-${NOTE}.json-0a0b0c0d0e0f`);
    expect(left.filter((name) => name.startsWith(`.tmp-${NEW_NOTE}-`))).toHaveLength(1);
    expect(left.filter((name) => name.startsWith(`.tmp-deleted-${OTHER_NOTE}-`))).toHaveLength(1);
    expect(existsSync(join(notesDir(ws), ".tmp-stray-0a0b0c0d0e0f"))).toBe(false);
    expect(pass.removed).toBe(5);

    filling.open();
    removing.open();
    await creating;
    expect(await deleting).toBe("removed");
    expect(await listTree(parent)).toEqual([`${NEW_NOTE}/`, `${NEW_NOTE}/content`]);
  });

  it("a young leftover waits for the age bound; at boot (no bound) it goes", async () => {
    await mkdir(join(parent, `.tmp-${NOTE}-0a0b0c0d`));
    const now = Date.now();
    await sweepOwnerPartition(notesDir(ws), RecoveryPass.housekeeping(now));
    expect(await readdir(parent)).toEqual([`.tmp-${NOTE}-0a0b0c0d`]);
    await sweepOwnerPartition(notesDir(ws), RecoveryPass.boot(now));
    expect(await readdir(parent)).toEqual([]);
  });
});
