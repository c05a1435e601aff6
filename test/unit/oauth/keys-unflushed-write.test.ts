import { afterEach, beforeEach, expect, it } from "vitest";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";
import { ACCESS_TTL_SECONDS, type TestClock, tempInstance, testClock } from "./fixtures.ts";

// A rotation writes the new key's file, then the previous key's marked retired, each renamed into
// `oauth/keys/` and the folder flushed. When a flush failed after its rename, the rotation threw
// and memory went on signing with the previous key, while the next boot signed with the new one:
// a new key refused was there after all, a retirement refused had happened. An overwrite that lands
// is done, a create undone (ADR 0166, amended 2026-12-07).

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clock = testClock();
});

afterEach(() => cleanup());

async function loaded(): Promise<SigningKeys> {
  const keys = new SigningKeys(layout, ACCESS_TTL_SECONDS, clock);
  await keys.load();
  return keys;
}

/** Runs `work` with the keys folder's `nth` flush (1-based) failing. */
function nthFolderFlushFails(nth: number, work: () => Promise<unknown>) {
  const folder = layout.collectionDir("oauth/keys");
  let flushes = 0;
  return journalDuring(work, {
    sync: (path) => (path === folder && ++flushes === nth ? eio() : undefined),
  });
}

it("a rotation whose new key lands but whose folder's flush fails makes no key, now or after a restart", async () => {
  const keys = await loaded();
  const first = keys.current().kid;
  let refusal: unknown;
  await nthFolderFlushFails(1, () =>
    keys.rotate().catch((error: unknown) => {
      refusal = error;
    }),
  );
  expect(refusal).toMatchObject({ code: "EIO" });
  expect(keys.current().kid).toBe(first);
  const restarted = await loaded();
  expect(restarted.current().kid).toBe(first);
  expect(restarted.jwks().keys).toHaveLength(1);
});

it("a rotation whose retirement lands but whose folder's flush fails is done: the new key signs, now and after a restart", async () => {
  const keys = await loaded();
  const first = keys.current().kid;
  clock.advance(1000);
  let fresh = "";
  await nthFolderFlushFails(2, async () => {
    fresh = (await keys.rotate()).kid;
  });
  expect(keys.current().kid).toBe(fresh);
  expect(keys.find(first)?.retiredAt).toBe(clock());
  const restarted = await loaded();
  expect(restarted.current().kid).toBe(fresh);
  expect(restarted.find(first)?.retiredAt).toBe(clock());
});
