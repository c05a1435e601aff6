import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { SealKeyRing } from "../../../src/crypto/seal.ts";
import { CredentialStore } from "../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

// A credential is sealed into its file, renamed into `credentials/`, then the folder flushed; the
// store keeps an index of every credential's key version. When that flush failed, the write threw
// and the index was not kept: a reseal that landed was counted stale (and `atrium credentials
// reseal` stopped, though the value was resealed), and a new credential refused at its put was
// counted at the next boot. An overwrite that lands is done, a create undone (ADR 0166, amended
// 2026-12-07).

const OLD = randomBytes(32);
const NEW = randomBytes(32);
const RECORD = "cn_0123456789abcdef";
const FIELD = "auth.value";
const SECRET = "sk-live-0123456789-never-logged";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
const OLD_ONLY: SealKeyRing = { keys: new Map([[1, OLD]]), newest: 1 };
const ROTATED: SealKeyRing = {
  keys: new Map([
    [1, OLD],
    [2, NEW],
  ]),
  newest: 2,
};

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-credentials-unflushed-"));
  layout = new StorageLayout(root);
});

afterEach(() => rm(root, { recursive: true, force: true }));

const folderFlushFails = (work: () => Promise<unknown>) => {
  const folder = layout.collectionDir("credentials");
  return journalDuring(work, { sync: (path) => (path === folder ? eio() : undefined) });
};

it("a reseal whose file lands but whose folder's flush fails is done: nothing is left stale, now or after a restart", async () => {
  const id = await (await CredentialStore.open(layout, OLD_ONLY)).put(RECORD, FIELD, SECRET);
  const store = await CredentialStore.open(layout, ROTATED);
  let resealed: number | undefined;
  await folderFlushFails(async () => {
    resealed = await store.resealAll();
  });
  expect(resealed).toBe(1);
  expect(store.staleCount()).toBe(0);
  const restarted = await CredentialStore.open(layout, ROTATED);
  expect(restarted.staleCount()).toBe(0);
  expect(await restarted.open(id, RECORD, FIELD)).toBe(SECRET);
});

it("a new credential whose file lands but whose folder's flush fails is not stored, now or after a restart", async () => {
  const store = await CredentialStore.open(layout, OLD_ONLY);
  await store.put(RECORD, FIELD, SECRET);
  let refusal: unknown;
  await folderFlushFails(() =>
    store.put(RECORD, "auth.other", SECRET).catch((error: unknown) => {
      refusal = error;
    }),
  );
  expect(refusal).toMatchObject({ code: "EIO" });
  expect(store.count()).toBe(1);
  expect((await CredentialStore.open(layout, OLD_ONLY)).count()).toBe(1);
});
