import { readdirSync, readlinkSync } from "node:fs";
import { truncate } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLedger } from "../../../../src/platform/connections/audit.ts";
import type { AuditRecord } from "../../../../src/platform/connections/audit-entry.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A day file is flushed a second after its first line, by a timer no caller waits on. A flush that
// fails there (EIO from a failing disk; ENOSPC or EDQUOT from a filesystem that allocates only when
// it writes back) used to be an unhandled rejection, which ends the process and every workspace
// with it. It is logged, the file closed, and the next append starts afresh (adr/0037, amended).

const ALICE = `usr_${"a".repeat(24)}`;
const requested = (tool: string): AuditRecord => ({
  principalId: ALICE,
  connection: "everything",
  tool,
  phase: "requested",
});
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let temp: TempRoot;
let time: FakeTime;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeEach(async () => {
  temp = await openTempRoot("audit-flush", ALICE);
  time = new FakeTime(Date.UTC(2026, 0, 1, 12));
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(async () => {
  process.off("unhandledRejection", onUnhandled);
  await temp.remove();
});

function openFilesUnder(dir: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
    } catch {
      return false;
    }
  }).length;
}

describe("an audit day file whose delayed flush fails", () => {
  it("is logged, not an unhandled rejection; the file is closed and the next append reads the file again", async () => {
    const { log, lines } = memoryLog();
    const ledger = new AuditLedger(temp.layout.partition("connections"), time.clock, time.timers, log);
    const dir = join(temp.layout.partition("connections").dir(temp.ws), "audit");
    const file = join(dir, "2026-01-01.jsonl");
    let failures = 1;
    await journalDuring(
      async () => {
        await ledger.append(temp.ws, requested("one"));
        await time.advance(2_000); // the flush falls due, and fails
        await ledger.flush(); // waits for it, in turn
        expect(openFilesUnder(dir)).toBe(0);
        // What the failed flush covered may not be on the disk: say it was lost.
        await truncate(file, 0);
        await ledger.append(temp.ws, requested("two"));
        await ledger.flush();
      },
      { sync: (path) => (path === file && failures-- > 0 ? eio() : undefined) },
    );
    expect(unhandled.map(String)).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        workspaceId: temp.ws,
        err: expect.objectContaining({ code: "EIO" }),
      }),
    );
    // The seq follows the file as it is, as after a restart, not the head held before the failure.
    const { entries } = await ledger.page(temp.ws);
    expect(entries.map((entry) => [entry.seq, entry.tool])).toEqual([[1, "two"]]);
  });
});
