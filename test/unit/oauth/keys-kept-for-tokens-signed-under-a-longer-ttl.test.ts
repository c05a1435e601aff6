import { readFile, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MAX_ACCESS_TOKEN_TTL_SECONDS } from "../../../src/instance/schema.ts";
import { CLOCK_TOLERANCE_SECONDS } from "../../../src/kernel/clock.ts";
import { SigningKeys } from "../../../src/oauth/keys.ts";
import type { StorageLayout } from "../../../src/storage/paths.ts";
import { type TestClock, tempInstance, testClock } from "./fixtures.ts";

// An operator lowers oauth.accessTokenTtlSeconds from a day to 5 minutes and restarts: the
// tokens the keys signed before live on for up to a day, and so must the keys that verify them.
const DAY_SECONDS = 86_400;
const SHORT_SECONDS = 300;
const HOUR_MS = 3_600_000;

let layout: StorageLayout;
let cleanup: () => Promise<void>;
let clock: TestClock;

beforeEach(async () => {
  ({ layout, cleanup } = await tempInstance());
  clock = testClock();
});

afterEach(() => cleanup());

const held = (keys: SigningKeys) => keys.jwks().keys.map((key) => key.kid);

/** Rewrites a key's record as a release before the lifetimes were recorded wrote it. */
async function asRecordedBefore(kid: string): Promise<void> {
  const file = layout.collectionFile("oauth/keys", kid);
  const { tokenTtlSeconds, tokensUntil, ...older } = JSON.parse(await readFile(file, "utf8"));
  await writeFile(file, JSON.stringify(older));
}

it("a key retired under a day-long TTL verifies for a day after it, through a restart that lowered the TTL", async () => {
  const before = new SigningKeys(layout, DAY_SECONDS, clock);
  await before.load();
  const retiredLong = before.current().kid;
  await before.rotate();
  const signedLong = before.current().kid;

  clock.advance(HOUR_MS);
  const after = new SigningKeys(layout, SHORT_SECONDS, clock);
  await after.load();
  // The key the day-long process signed with is retired by the short one: its tokens still have a day.
  await after.rotate();
  clock.advance(HOUR_MS);
  const third = (await after.rotate()).kid;
  expect(held(after)).toContain(retiredLong);
  expect(held(after)).toContain(signedLong);

  // Gone once the last token either can have signed has expired, plus the clock tolerance.
  clock.advance(DAY_SECONDS * 1000 - 2 * HOUR_MS + CLOCK_TOLERANCE_SECONDS * 1000 + 1);
  await after.rotate();
  expect(held(after)).not.toContain(retiredLong);
  expect(held(after)).toContain(signedLong);
  expect(held(after)).toContain(third);
});

it("a key that signed under the longer TTL after a boot raised it is kept for that TTL", async () => {
  const short = new SigningKeys(layout, SHORT_SECONDS, clock);
  await short.load();
  const kid = short.current().kid;
  const raised = new SigningKeys(layout, DAY_SECONDS, clock);
  await raised.load();
  const lowered = new SigningKeys(layout, SHORT_SECONDS, clock);
  await lowered.load();
  await lowered.rotate();
  clock.advance(HOUR_MS);
  await lowered.rotate();
  expect(held(lowered)).toContain(kid);
});

it("keys recorded before the lifetimes were are kept for the longest TTL allowed", async () => {
  const before = new SigningKeys(layout, DAY_SECONDS, clock);
  await before.load();
  const retiredBefore = before.current().kid;
  const current = (await before.rotate()).kid;
  await asRecordedBefore(retiredBefore);
  await asRecordedBefore(current);

  const after = new SigningKeys(layout, SHORT_SECONDS, clock);
  await after.load();
  await after.rotate();
  clock.advance(MAX_ACCESS_TOKEN_TTL_SECONDS * 1000 + CLOCK_TOLERANCE_SECONDS * 1000);
  await after.rotate();
  expect(held(after)).toContain(retiredBefore);
  expect(held(after)).toContain(current);

  clock.advance(1);
  await after.rotate();
  expect(held(after)).not.toContain(retiredBefore);
  expect(held(after)).not.toContain(current);
});
