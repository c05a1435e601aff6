import { readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventBus } from "../../../../src/kernel/events.ts";
import { createLogger } from "../../../../src/log.ts";
import { AuditLedger } from "../../../../src/platform/connections/audit.ts";
import type { AuditRecord } from "../../../../src/platform/connections/audit-entry.ts";
import { StorageLayout } from "../../../../src/storage/paths.ts";
import { storageFullReason } from "../../../../src/storage/storage-full.ts";
import { WorkspaceStore } from "../../../../src/workspace/store.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { canMount, mountSmallDisk, type SmallDisk } from "../../../helpers/small-disk.ts";

// The audit ledger on a real full disk (a small tmpfs). An entry the ledger cannot write whole is
// refused, which refuses the call it records (adr/0037, 0090); the refusal leaves no descriptor
// open, and once space is back the next entry starts on a line of its own (recovery rule R7).

const ALICE = `usr_${"a".repeat(24)}`;
const DAY_MS = 24 * 60 * 60 * 1000;
const requested = (tool: string): AuditRecord => ({
  principalId: ALICE,
  connection: "everything",
  tool,
  phase: "requested",
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

describe.skipIf(!canMount)("the audit ledger on a disk that fills", () => {
  let disk: SmallDisk;
  let time: FakeTime;
  let ledger: AuditLedger;
  let ws: string;
  let dir: string;
  beforeEach(async () => {
    disk = await mountSmallDisk("4m");
    const root = join(disk.dir, "data");
    await mkdir(root);
    const layout = new StorageLayout(root);
    const workspaces = new WorkspaceStore(layout, new EventBus(createLogger("silent")));
    await workspaces.load();
    ws = (await workspaces.create("W", ALICE)).id;
    time = new FakeTime(Date.UTC(2026, 0, 1, 12));
    ledger = new AuditLedger(layout.partition("connections"), time.clock, time.timers);
    dir = join(layout.partition("connections").dir(ws), "audit");
  });
  afterEach(async () => {
    await disk.unmount();
  });

  it("refuses an entry only part of which fit, and the next one starts on a new line", async () => {
    const file = join(dir, "2026-01-01.jsonl");
    // Entries until the day file's last page has less room than one more.
    let n = 0;
    do await ledger.append(ws, requested(`tool${++n}`));
    while (4096 - (statSync(file).size % 4096) > 60);

    disk.fill();
    const refused = await ledger.append(ws, requested("while-full")).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(storageFullReason(refused), String(refused)).toBe("short write");
    expect(openFilesUnder(dir)).toBe(0);
    await disk.free();
    const after = await ledger.append(ws, requested("after-space-freed"));

    expect(after.seq).toBe(n + 1);
    const tools = (await ledger.page(ws, { limit: 500 })).entries.map((entry) => entry.tool);
    expect(tools).toHaveLength(n + 1);
    expect(tools[0]).toBe("after-space-freed");
    expect(tools).not.toContain("while-full");
    const lines = readFileSync(file, "utf8").split("\n");
    // The part of "while-full" that fit is a torn line of its own, which readers skip.
    expect(lines.at(-3)).toMatch(/^\{"seq"/);
    expect(() => JSON.parse(lines.at(-3) as string)).toThrow();
    expect(JSON.parse(lines.at(-2) as string)).toMatchObject({ seq: n + 1, tool: "after-space-freed" });
  }, 60_000);

  it("leaves no file descriptor open for the entries it refuses", async () => {
    await ledger.append(ws, requested("first"));
    await time.advance(5_000); // the flush closes the day file
    await time.advance(DAY_MS); // the next entries go to a new day's file
    disk.fill();
    let refused = 0;
    for (let i = 0; i < 20; i++) await ledger.append(ws, requested(`t${i}`)).catch(() => refused++);
    expect(refused).toBe(20);
    expect(openFilesUnder(dir)).toBe(0);
  }, 60_000);
});
