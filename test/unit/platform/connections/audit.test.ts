import { appendFile, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidInput, WorkspaceNotFound } from "../../../../src/errors.ts";
import { AuditLedger } from "../../../../src/platform/connections/audit.ts";
import { type AuditRecord, InvalidAuditRecord } from "../../../../src/platform/connections/audit-entry.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = `usr_${"a".repeat(24)}`;
const DAY_MS = 24 * 60 * 60 * 1000;
const DIGEST = `sha256:${"0".repeat(64)}`;

let temp: TempRoot;
let time: FakeTime;

function openLedger(): AuditLedger {
  return new AuditLedger(temp.layout.partition("connections"), time.clock);
}

function auditDir(): string {
  return join(temp.layout.partition("connections").dir(temp.ws), "audit");
}

function requested(tool = "echo"): AuditRecord {
  return { principalId: ALICE, connection: "everything", tool, phase: "requested" };
}

async function appendMany(ledger: AuditLedger, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) await ledger.append(temp.ws, requested(`t${i}`));
}

beforeEach(async () => {
  temp = await openTempRoot("audit", ALICE);
  time = new FakeTime(Date.UTC(2026, 0, 1, 12));
});

afterEach(async () => {
  await temp.remove();
});

describe("appending", () => {
  it("stamps seq and time and writes one line to the file of the entry's UTC day", async () => {
    const ledger = openLedger();
    const first = await ledger.append(temp.ws, { ...requested(), requestId: "req-1" });
    const second = await ledger.append(temp.ws, {
      ...requested(),
      phase: "decision",
      decision: "denied",
      deniedBy: "drift",
      reason: "the tool changed upstream since snapshot 3",
    });
    expect(first).toEqual({
      seq: 1,
      at: "2026-01-01T12:00:00.000Z",
      requestId: "req-1",
      principalId: ALICE,
      connection: "everything",
      tool: "echo",
      phase: "requested",
    });
    expect(second.seq).toBe(2);
    expect(await readdir(auditDir())).toEqual(["2026-01-01.jsonl"]);
    const lines = (await readFile(join(auditDir(), "2026-01-01.jsonl"), "utf8")).split("\n");
    expect(lines).toEqual([JSON.stringify(first), JSON.stringify(second), ""]);
    expect((await stat(join(auditDir(), "2026-01-01.jsonl"))).mode & 0o777).toBe(0o600);
  });

  it("starts a new file when the UTC day turns, and pages across the files", async () => {
    const ledger = openLedger();
    await ledger.append(temp.ws, requested("before-midnight"));
    await time.advance(12 * 60 * 60 * 1000 - 1);
    await ledger.append(temp.ws, requested("last-ms"));
    await time.advance(1);
    await ledger.append(temp.ws, requested("after-midnight"));
    await time.advance(DAY_MS);
    await ledger.append(temp.ws, requested("next-day"));
    expect((await readdir(auditDir())).sort()).toEqual([
      "2026-01-01.jsonl",
      "2026-01-02.jsonl",
      "2026-01-03.jsonl",
    ]);
    const page1 = await ledger.page(temp.ws, { limit: 3 });
    expect(page1.entries.map((e) => [e.seq, e.tool])).toEqual([
      [4, "next-day"],
      [3, "after-midnight"],
      [2, "last-ms"],
    ]);
    const page2 = await ledger.page(temp.ws, { limit: 3, cursor: page1.nextCursor });
    expect(page2.entries.map((e) => e.tool)).toEqual(["before-midnight"]);
    expect(page2.nextCursor).toBeUndefined();
  });

  it("never stamps a time before the previous entry's, so a clock stepped back keeps the files in order", async () => {
    const ledger = openLedger();
    await time.advance(DAY_MS);
    await ledger.append(temp.ws, requested("a"));
    time = new FakeTime(Date.UTC(2026, 0, 1, 12)); // a day earlier
    const reopened = new AuditLedger(temp.layout.partition("connections"), time.clock);
    const entry = await reopened.append(temp.ws, requested("b"));
    expect(entry).toMatchObject({ seq: 2, at: "2026-01-02T12:00:00.000Z" });
    expect(await readdir(auditDir())).toEqual(["2026-01-02.jsonl"]);
  });

  it("keeps each workspace's ledger and seq to itself", async () => {
    const ledger = openLedger();
    const other = (await temp.workspaces.create("Other", ALICE)).id;
    await Promise.all([appendMany(ledger, 3), ledger.append(other, requested("elsewhere"))]);
    expect((await ledger.page(other)).entries.map((e) => [e.seq, e.tool])).toEqual([[1, "elsewhere"]]);
    expect((await ledger.page(temp.ws)).entries.map((e) => e.seq)).toEqual([3, 2, 1]);
  });

  it("refuses to create the workspace it records for", async () => {
    const gone = "ws_0123456789abcdef";
    await expect(openLedger().append(gone, requested())).rejects.toThrow(WorkspaceNotFound);
  });
});

describe("paging", () => {
  it("answers newest first with a cursor while more follow, and an empty ledger with nothing", async () => {
    const ledger = openLedger();
    expect(await ledger.page(temp.ws)).toEqual({ entries: [] });
    await appendMany(ledger, 7);
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await ledger.page(temp.ws, { limit: 3, cursor });
      seen.push(...page.entries.map((e) => e.seq));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined);
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(pages).toBe(3);
  });

  it("gives no cursor when the page ends exactly at the oldest entry", async () => {
    const ledger = openLedger();
    await appendMany(ledger, 4);
    const page = await ledger.page(temp.ws, { limit: 4 });
    expect(page.entries).toHaveLength(4);
    expect(page.nextCursor).toBeUndefined();
  });

  it("pages by seq: entries appended after a page was read do not shift the next page", async () => {
    const ledger = openLedger();
    await appendMany(ledger, 5);
    const first = await ledger.page(temp.ws, { limit: 2 });
    await appendMany(ledger, 3);
    const next = await ledger.page(temp.ws, { limit: 2, cursor: first.nextCursor });
    expect(next.entries.map((e) => e.seq)).toEqual([3, 2]);
  });

  it("reads a day larger than one read chunk, in order", async () => {
    const ledger = openLedger();
    const long = "r".repeat(200);
    for (let i = 0; i < 200; i++) {
      await ledger.append(temp.ws, {
        ...requested(),
        phase: "decision",
        decision: "denied",
        deniedBy: "schema",
        reason: long,
      });
    }
    expect((await stat(join(auditDir(), "2026-01-01.jsonl"))).size).toBeGreaterThan(64 * 1024);
    const seqs: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await ledger.page(temp.ws, { limit: 37, cursor });
      seqs.push(...page.entries.map((e) => e.seq));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => 200 - i));
  });

  it.each([0, 501, 1.5, -1])("refuses limit %s", async (limit) => {
    await expect(openLedger().page(temp.ws, { limit })).rejects.toThrow(InvalidInput);
  });

  it.each(["", "7", "abc", "2026-01-01.0.0", "2026-01-01.x.3", "../2026-01-01.0.3"])(
    "refuses cursor %j",
    async (cursor) => {
      await expect(openLedger().page(temp.ws, { cursor })).rejects.toThrow(InvalidInput);
    },
  );
});

describe("a personal connection's result", () => {
  it("is read without its digest and size, from an entry written before they were left out (adr/0135)", async () => {
    const ledger = openLedger();
    const executed = {
      principalId: ALICE,
      tool: "echo",
      phase: "executed" as const,
      latencyMs: 3,
      isError: false,
    };
    await ledger.append(temp.ws, {
      ...executed,
      connection: "everything",
      resultBytes: 10,
      resultDigest: DIGEST,
    });
    await ledger.flush();
    // As an older Atrium wrote a personal connection's call.
    const [day] = await readdir(auditDir());
    const older = { seq: 2, at: new Date(time.clock()).toISOString(), ...executed, connection: "my_notes" };
    await appendFile(
      join(auditDir(), day as string),
      `${JSON.stringify({ ...older, resultBytes: 10, resultDigest: DIGEST })}\n`,
    );
    const { entries } = await openLedger().page(temp.ws);
    expect(entries).toEqual([
      older,
      expect.objectContaining({ connection: "everything", resultDigest: DIGEST }),
    ]);
  });
});

describe("restart and crashes", () => {
  it("continues the seq in a new instance, from the newest file", async () => {
    const first = openLedger();
    await appendMany(first, 3);
    await time.advance(DAY_MS);
    await appendMany(first, 2);
    const entry = await openLedger().append(temp.ws, requested());
    expect(entry.seq).toBe(6);
  });

  it("skips a torn last line on read, and the next append starts a new line", async () => {
    const ledger = openLedger();
    await appendMany(ledger, 2);
    const file = join(auditDir(), "2026-01-01.jsonl");
    await appendFile(file, '{"seq":3,"at":"2026-01-01T12:00:00.000Z","principalId":"usr_');
    const restarted = openLedger();
    expect((await restarted.page(temp.ws)).entries.map((e) => e.seq)).toEqual([2, 1]);
    const next = await restarted.append(temp.ws, requested("after-crash"));
    expect(next.seq).toBe(3);
    const page = await restarted.page(temp.ws);
    expect(page.entries.map((e) => [e.seq, e.tool])).toEqual([
      [3, "after-crash"],
      [2, "t2"],
      [1, "t1"],
    ]);
    const lines = (await readFile(file, "utf8")).split("\n");
    expect(lines).toHaveLength(5); // two entries, the torn line, the new entry, and the final ""
    expect(JSON.parse(lines[3] as string)).toEqual(next);
  });

  it("finds the seq in the day before when the newest file holds only a torn line", async () => {
    const ledger = openLedger();
    await appendMany(ledger, 4);
    await appendFile(join(auditDir(), "2026-01-02.jsonl"), '{"seq":5,"at":"2026-01-02T00:0');
    await time.advance(DAY_MS);
    const entry = await openLedger().append(temp.ws, requested());
    expect(entry).toMatchObject({ seq: 5, at: "2026-01-02T12:00:00.000Z" });
  });

  it("loses nothing to concurrent appends, and their lines are in seq order", async () => {
    const ledger = openLedger();
    const entries = await Promise.all(
      Array.from({ length: 50 }, (_, i) => ledger.append(temp.ws, requested(`c${i}`))),
    );
    expect(entries.map((e) => e.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    const lines = (await readFile(join(auditDir(), "2026-01-01.jsonl"), "utf8")).trim().split("\n");
    expect(lines.map((line) => JSON.parse(line).seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(lines.map((line) => JSON.parse(line).tool)).size).toBe(50);
  });
});

describe("what the ledger refuses", () => {
  const bad: [string, Record<string, unknown>][] = [
    ["arguments", { ...requested(), arguments: { city: "Paris" } }],
    ["result", { ...requested(), phase: "executed", latencyMs: 1, isError: false, result: { content: [] } }],
    ["seq", { ...requested(), seq: 99 }],
    ["at", { ...requested(), at: "2020-01-01T00:00:00.000Z" }],
    ["principalId", { ...requested(), principalId: "alice" }],
    ["connection", { ...requested(), connection: "Bad Name" }],
    ["connection", { ...requested(), connection: "a__b" }],
    ["tool", { ...requested(), tool: "" }],
    ["tool", { ...requested(), tool: "x".repeat(129) }],
    ["tool", { ...requested(), tool: "two\nlines" }],
    ["tool", { ...requested(), tool: "hid\u200bden" }],
    ["phase", { ...requested(), phase: "done" }],
    ["requestId", { ...requested(), requestId: "has space" }],
    ["decision", { ...requested(), decision: "allowed" }],
    ["decision", { ...requested(), phase: "decision" }],
    ["deniedBy", { ...requested(), phase: "decision", decision: "denied" }],
    ["deniedBy", { ...requested(), phase: "decision", decision: "denied", deniedBy: "whim" }],
    ["deniedBy", { ...requested(), phase: "decision", decision: "allowed", deniedBy: "scope" }],
    [
      "reason",
      { ...requested(), phase: "decision", decision: "denied", deniedBy: "scope", reason: "r".repeat(201) },
    ],
    ["latencyMs", { ...requested(), phase: "executed", isError: false }],
    ["latencyMs", { ...requested(), phase: "executed", latencyMs: -1, isError: false }],
    ["isError", { ...requested(), phase: "executed", latencyMs: 1 }],
    ["resultBytes", { ...requested(), phase: "executed", latencyMs: 1, isError: false, resultBytes: 2 }],
    [
      "resultBytes",
      {
        ...requested(),
        phase: "executed",
        latencyMs: 1,
        isError: false,
        resultBytes: 1.5,
        resultDigest: DIGEST,
      },
    ],
    [
      "resultDigest",
      {
        ...requested(),
        phase: "executed",
        latencyMs: 1,
        isError: false,
        resultBytes: 2,
        resultDigest: "md5:00",
      },
    ],
    ["latencyMs", { ...requested(), phase: "decision", decision: "allowed", latencyMs: 3 }],
  ];

  it.each(bad)("refuses a record with a bad or foreign %s, and writes nothing", async (field, record) => {
    const ledger = openLedger();
    const attempt = ledger.append(temp.ws, record as unknown as AuditRecord);
    await expect(attempt).rejects.toThrow(InvalidAuditRecord);
    await expect(attempt).rejects.toMatchObject({ field });
    expect(await ledger.page(temp.ws)).toEqual({ entries: [] });
  });

  it("names a foreign field without echoing its value", async () => {
    const attempt = openLedger().append(temp.ws, {
      ...requested(),
      arguments: "sk-secret-value",
    } as unknown as AuditRecord);
    await expect(attempt).rejects.toThrow(/"arguments" is not an audit field/);
    await expect(attempt).rejects.not.toThrow(/sk-secret-value/);
  });

  it("accepts every phase in its full form and drops optionals given as undefined", async () => {
    const ledger = openLedger();
    await ledger.append(temp.ws, { ...requested(), requestId: undefined });
    await ledger.append(temp.ws, { ...requested(), phase: "decision", decision: "allowed" });
    await ledger.append(temp.ws, {
      ...requested(),
      phase: "executed",
      latencyMs: 12.5,
      resultBytes: 2,
      resultDigest: DIGEST,
      isError: false,
    });
    const { entries } = await ledger.page(temp.ws);
    expect(entries.map((e) => e.phase)).toEqual(["executed", "decision", "requested"]);
    expect("requestId" in (entries[2] as object)).toBe(false);
  });
});
