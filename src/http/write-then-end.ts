/**
 * Runs a write that ends someone's access (a removal, a demotion, a deactivation, an archive)
 * or ends nothing (a rename), then `ends`, what must end with it, whatever the write answered.
 * The write can land and still throw: the new file renamed into place (or the workspace's folder
 * into `_archive/`), then a folder's flush failed, and the store or the directory holds in memory
 * what the disk holds (ADR 0138). Such a write is the change asked for, as an acceptance's is its join: when it threw
 * yet memory now shows what was asked (`shown`), which it did not before, it is `done`, and
 * answered as done, `undefined` in place of what it returns (ADR 0148). Before, its 500 came ahead
 * of `ends`: a removed member's grants, a demoted admin's invitations, a deactivated person's
 * grants and an archived workspace's grants outlived the change
 * (test/integration/members-unflushed-write.test.ts, users-unflushed-write.test.ts,
 * archive-unflushed-write.test.ts). Outside the store's lock: an acceptance holds an invitation's
 * key while it waits for that lock, and `ends` takes invitations' keys. `ends` answers each thing
 * that ends, and every one runs whatever another did: run in turn, a failed grants' revocation
 * skipped the sent invitations' (test/integration/members-unflushed-write.test.ts "the invitations
 * the removed admin sent end all the same"). The first failure is the request's 500; what it left
 * is refused meanwhile and finished by the retry or by housekeeping (ADR 0148).
 */
export async function writeThenEnd<T>(
  write: () => Promise<T>,
  shown: () => boolean,
  ends: (done: boolean) => readonly (() => unknown)[],
): Promise<T | undefined> {
  const shownBefore = shown();
  let written: { value: T } | { error: unknown };
  try {
    written = { value: await write() };
  } catch (error) {
    written = { error };
  }
  const done = "value" in written || (!shownBefore && shown());
  const ended = await Promise.allSettled(ends(done).map(async (end) => end()));
  const failed = ended.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
  if ("error" in written && !done) throw written.error;
  return "value" in written ? written.value : undefined;
}
