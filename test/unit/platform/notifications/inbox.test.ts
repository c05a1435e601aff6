import { readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WorkspaceNotFound } from "../../../../src/errors.ts";
import type { AtriumEvent } from "../../../../src/kernel/events.ts";
import { MemberAcks } from "../../../../src/platform/notifications/acks.ts";
import type { NotificationSettings } from "../../../../src/platform/notifications/config.ts";
import { Inbox } from "../../../../src/platform/notifications/inbox.ts";
import type { NotificationDraft } from "../../../../src/platform/notifications/model.ts";
import { RecoveryPass } from "../../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";
import { journalDuring } from "../../../helpers/fs-journal.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

/**
 * A slow disk for one caller: a read of the seq's mark (seq.json) made inside `slowReads.run(p, …)`
 * answers only once `p` has settled, and of another file with `slowReads.run({ until: p, file }, …)`.
 * Every other read is the real one.
 */
const slowReads = await vi.hoisted(async () => {
  const { AsyncLocalStorage } = await import("node:async_hooks");
  return new AsyncLocalStorage<Promise<unknown> | { until: Promise<unknown>; file: string }>();
});
vi.mock("../../../../src/storage/atomic.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../../src/storage/atomic.ts")>();
  return {
    ...real,
    readJsonIfExists: async (path: string) => {
      const slow = slowReads.getStore();
      const { until, file } = slow instanceof Promise ? { until: slow, file: "seq.json" } : (slow ?? {});
      if (until !== undefined && file !== undefined && path.endsWith(file))
        await until.catch(() => undefined);
      return real.readJsonIfExists(path);
    },
  };
});

const ALICE = `usr_${"a".repeat(24)}`;
const BOB = `usr_${"b".repeat(24)}`;
const DAY_MS = 24 * 60 * 60 * 1000;
const SETTINGS: NotificationSettings = { retentionDays: 30, maxPerWorkspace: 10 };

let temp: TempRoot;
let time: FakeTime;
let published: AtriumEvent[];

/** How many times `work` listed an inbox's `entries/` folder, counted at node:fs/promises. */
async function entryListingsDuring(work: () => Promise<unknown>): Promise<number> {
  let listings = 0;
  await withFsHook(
    "readdir",
    (real) =>
      (path, ...rest) => {
        if (String(path).endsWith("/entries")) listings += 1;
        return real(path, ...rest);
      },
    work,
  );
  return listings;
}

function openInbox(settings = SETTINGS): Inbox {
  return new Inbox(temp.layout.partition("notifications"), settings, temp.events, time.clock);
}

beforeEach(async () => {
  temp = await openTempRoot("inbox", ALICE);
  time = new FakeTime();
  published = [];
  temp.events.subscribe({ types: ["notification.created"] }, (event) => void published.push(event));
});

afterEach(async () => {
  await temp.remove();
});

describe("posting", () => {
  it("stamps id, seq, workspace, source and time, and announces the entry", async () => {
    const entry = await openInbox().post(temp.ws, "tasks", { title: "Run failed", severity: "error" });
    expect(entry).toEqual({
      id: expect.stringMatching(/^ntf_[0-9a-f]{24}$/),
      seq: 1,
      workspaceId: temp.ws,
      source: "tasks",
      receivedAt: new Date(time.clock()).toISOString(),
      title: "Run failed",
      severity: "error",
    });
    expect(published).toEqual([
      {
        type: "notification.created",
        workspaceId: temp.ws,
        notification: { id: entry.id, seq: 1, source: "tasks", severity: "error", title: "Run failed" },
      },
    ]);
  });

  it.each(["id", "seq", "workspaceId", "source", "receivedAt"])(
    "refuses a producer that sets %s, and records nothing",
    async (field) => {
      const inbox = openInbox();
      const forged = { title: "x", [field]: "forged" } as unknown as NotificationDraft;
      await expect(inbox.post(temp.ws, "tasks", forged)).rejects.toThrow(`cannot set "${field}"`);
      expect((await inbox.page(temp.ws, ALICE)).notifications).toEqual([]);
      expect(published).toEqual([]);
    },
  );

  it("refuses a bad title, body, severity, recipient or data by what is wrong", async () => {
    const inbox = openInbox();
    const bad: [NotificationDraft, string][] = [
      [{ title: "" }, "title"],
      [{ title: "two\nlines" }, "title"],
      [{ title: "x".repeat(201) }, "title"],
      [{ title: "ok", body: "x".repeat(4001) }, "body"],
      [{ title: "ok", severity: "fatal" as "error" }, "severity"],
      [{ title: "ok", to: "../etc" }, '"to"'],
      [{ title: "ok", data: [] as unknown as Record<string, unknown> }, "data"],
      [{ title: "ok", data: { big: "x".repeat(5000) } }, "data"],
    ];
    for (const [draft, field] of bad) await expect(inbox.post(temp.ws, "t", draft)).rejects.toThrow(field);
    expect((await inbox.page(temp.ws, ALICE)).notifications).toEqual([]);
  });

  it("refuses a workspace that does not exist, creating nothing", async () => {
    await expect(openInbox().post("ws_0123456789abcdef", "t", { title: "x" })).rejects.toThrow(
      WorkspaceNotFound,
    );
    expect(await readdir(temp.root)).not.toContain("ws_0123456789abcdef");
  });

  it("gives gapless seqs to concurrent posts", async () => {
    const inbox = openInbox();
    const entries = await Promise.all(
      Array.from({ length: 20 }, (_, i) => inbox.post(temp.ws, "t", { title: `n${i}` })),
    );
    expect(entries.map((e) => e.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
});

describe("a post whose write fails", () => {
  it("is not left in the inbox, and the next post takes a seq of its own", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "tasks", { title: "first" });
    const entries = join(temp.layout.partition("notifications").dir(temp.ws), "entries");
    // The entry's rename lands, then the flush of its folder fails, as a disk's error does.
    const eio = Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    let failed: unknown;
    await journalDuring(
      async () => {
        failed = await inbox.post(temp.ws, "tasks", { title: "second" }).catch((error: unknown) => error);
      },
      { sync: (path) => (path === entries ? eio : undefined) },
    );
    expect(failed).toBe(eio);
    const third = await inbox.post(temp.ws, "tasks", { title: "third" });
    expect(third.seq).toBe(3);
    const names = await readdir(entries);
    expect(names.map((name) => name.slice(0, 12)).sort()).toEqual(["000000000001", "000000000003"]);
    const page = await inbox.page(temp.ws, ALICE);
    expect(page.notifications.map((n) => n.title)).toEqual(["third", "first"]);
  });

  it("never has its seq given again after a restart, though a member acknowledged its entry before it was removed", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "tasks", { title: "first" });
    const entries = join(temp.layout.partition("notifications").dir(temp.ws), "entries");
    const eio = Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    // The entry's rename has landed and its folder's flush is about to fail: Alice's page, which
    // reads without the lock, lists it meanwhile, and she acknowledges it by id.
    let seen: string[] = [];
    const failed = await journalDuring(
      () => inbox.post(temp.ws, "tasks", { title: "second" }).catch((error: unknown) => error),
      {
        sync: async (path) => {
          if (path !== entries) return undefined;
          const page = await inbox.page(temp.ws, ALICE);
          seen = page.notifications.map((n) => n.title);
          await inbox.ack(temp.ws, ALICE, { ids: page.notifications.map((n) => n.id) }, NO_CALLER);
          return eio;
        },
      },
    );
    expect(seen).toEqual(["second", "first"]);
    expect(failed.entries.some((entry) => entry.op === "rename" && entry.to.includes("000000000002-"))).toBe(
      true,
    );
    const restarted = openInbox();
    const third = await restarted.post(temp.ws, "tasks", { title: "after the restart" });
    expect(third.seq).toBe(3);
    const unacked = await restarted.page(temp.ws, ALICE, { unacked: true });
    expect(unacked.notifications.map((n) => n.title)).toEqual(["after the restart"]);
  });

  it("is not covered by an ack of all: the seq it took, given again after a restart, is new to everyone", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "tasks", { title: "first" });
    const entries = join(temp.layout.partition("notifications").dir(temp.ws), "entries");
    const eio = Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    await journalDuring(
      () => inbox.post(temp.ws, "tasks", { title: "never stored" }).catch(() => undefined),
      { sync: (path) => (path === entries ? eio : undefined) },
    );
    await inbox.ack(temp.ws, ALICE, { all: true }, NO_CALLER);
    const restarted = openInbox();
    await restarted.post(temp.ws, "tasks", { title: "after the restart" });
    const unacked = await restarted.page(temp.ws, ALICE, { unacked: true });
    expect(unacked.notifications.map((n) => n.title)).toEqual(["after the restart"]);
  });

  it("an ack of all answers how many of the entries the caller may see were not acknowledged", async () => {
    const inbox = openInbox();
    const first = await inbox.post(temp.ws, "t", { title: "one" });
    await inbox.post(temp.ws, "t", { title: "two" });
    await inbox.post(temp.ws, "t", { title: "for bob", to: BOB });
    await inbox.post(temp.ws, "t", { title: "three" });
    await inbox.ack(temp.ws, ALICE, { ids: [first.id] }, NO_CALLER);
    expect(await inbox.ack(temp.ws, ALICE, { all: true }, NO_CALLER)).toEqual({ acked: 2 });
    expect(await inbox.ack(temp.ws, ALICE, { all: true }, NO_CALLER)).toEqual({ acked: 0 });
    expect(await inbox.ack(temp.ws, BOB, { all: true }, NO_CALLER)).toEqual({ acked: 4 });
  });
});

describe("the sequence across restarts", () => {
  it("continues from the highest entry on disk", async () => {
    await openInbox().post(temp.ws, "t", { title: "one" });
    await openInbox().post(temp.ws, "t", { title: "two" });
    const third = await openInbox().post(temp.ws, "t", { title: "three" });
    expect(third.seq).toBe(3);
  });

  it("never reuses a seq after retention removed every entry", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "t", { title: "one" });
    await inbox.post(temp.ws, "t", { title: "two" });
    time.jump(31 * DAY_MS);
    expect(await inbox.prune(temp.ws)).toBe(2);
    expect((await inbox.page(temp.ws, ALICE)).notifications).toEqual([]);
    const afterRestart = await openInbox().post(temp.ws, "t", { title: "three" });
    expect(afterRestart.seq).toBe(3);
  });

  it("never reuses a seq when the first ack after a restart reads it while a post is writing", async () => {
    await openInbox().post(temp.ws, "t", { title: "one" });
    const restarted = openInbox(); // no seq in memory yet
    const posting = restarted.post(temp.ws, "t", { title: "two" });
    // The ack starts as the post does, and a read of the mark answers only after the post has
    // written seq 2: an ack that read the seq itself outside the workspace's lock stored 1 over
    // the post's 2 (the review's repro: [1, 2, 2]). An ack of all lists the entries under the lock.
    const acking = slowReads.run(posting, () => restarted.ack(temp.ws, ALICE, { all: true }, NO_CALLER));
    await Promise.all([posting, acking]);
    const next = await restarted.post(temp.ws, "t", { title: "three" });
    const files = await readdir(join(temp.layout.partition("notifications").dir(temp.ws), "entries"));
    expect(files.map((file) => Number(file.slice(0, 12))).sort((a, b) => a - b)).toEqual([1, 2, 3]);
    expect(next.seq).toBe(3);
    // All that existed when the ack ran is acknowledged, the post it waited behind included.
    const page = await restarted.page(temp.ws, ALICE, { unacked: true });
    expect(page.notifications.map((n) => n.seq)).toEqual([3]);
  });
});

describe("an inbox nobody has posted to", () => {
  it("is read without waiting behind the workspace's lock", async () => {
    const inbox = openInbox();
    // A retention pass holds the lock until the read has answered: a read that waited for it never would.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const pruning = slowReads.run({ until: held, file: "names.json" }, () => inbox.prune(temp.ws));
    const reading = inbox.page(temp.ws, ALICE).finally(release);
    expect(await reading).toEqual({ notifications: [] });
    await expect(inbox.get(temp.ws, ALICE, `ntf_${"0".repeat(24)}`)).rejects.toThrow("No notification");
    expect(await pruning).toBe(0);
  });

  it("a read racing the first post waits for it, so it never misses an entry it then acknowledges", async () => {
    const inbox = openInbox();
    const posting = inbox.post(temp.ws, "tasks", { title: "first" });
    const page = await inbox.page(temp.ws, ALICE);
    expect(page.notifications.map((n) => n.title)).toEqual(["first"]);
    await inbox.ack(temp.ws, ALICE, { all: true }, NO_CALLER);
    // What the ack covered is exactly what the page showed.
    expect((await inbox.page(temp.ws, ALICE)).notifications.map((n) => [n.title, n.acked])).toEqual([
      ["first", true],
    ]);
    expect((await posting).seq).toBe(1);
  });
});

describe("reading and acknowledging", () => {
  it("lists newest first, page by page, and shows a private entry to its addressee alone", async () => {
    const inbox = openInbox();
    for (let i = 1; i <= 5; i += 1) await inbox.post(temp.ws, "t", { title: `n${i}` });
    await inbox.post(temp.ws, "t", { title: "for bob", to: BOB });
    const first = await inbox.page(temp.ws, ALICE, { limit: 2 });
    expect(first.notifications.map((n) => n.title)).toEqual(["n5", "n4"]);
    const second = await inbox.page(temp.ws, ALICE, { limit: 2, cursor: first.nextCursor });
    expect(second.notifications.map((n) => n.title)).toEqual(["n3", "n2"]);
    const last = await inbox.page(temp.ws, ALICE, { limit: 2, cursor: second.nextCursor });
    expect(last).toEqual({ notifications: [expect.objectContaining({ title: "n1" })] });
    expect((await inbox.page(temp.ws, BOB, { limit: 1 })).notifications[0]?.title).toBe("for bob");
    const bobs = (await inbox.page(temp.ws, BOB)).notifications.find((n) => n.to === BOB);
    await expect(inbox.get(temp.ws, ALICE, bobs?.id ?? "")).rejects.toThrow("No notification");
    expect(published.at(-1)).toMatchObject({ ownerId: BOB });
  });

  it("keeps acknowledgements per member", async () => {
    const inbox = openInbox();
    const one = await inbox.post(temp.ws, "t", { title: "one" });
    const two = await inbox.post(temp.ws, "t", { title: "two" });
    expect(await inbox.ack(temp.ws, ALICE, { ids: [one.id] }, NO_CALLER)).toEqual({ acked: 1 });
    expect(await inbox.ack(temp.ws, ALICE, { ids: [one.id] }, NO_CALLER)).toEqual({ acked: 0 });
    expect((await inbox.page(temp.ws, ALICE, { unacked: true })).notifications.map((n) => n.id)).toEqual([
      two.id,
    ]);
    expect((await inbox.get(temp.ws, ALICE, one.id)).acked).toBe(true);
    expect((await inbox.get(temp.ws, BOB, one.id)).acked).toBe(false);
    expect((await inbox.page(temp.ws, BOB, { unacked: true })).notifications).toHaveLength(2);
    await inbox.ack(temp.ws, BOB, { all: true }, NO_CALLER);
    expect((await inbox.page(temp.ws, BOB, { unacked: true })).notifications).toEqual([]);
    // Acknowledged survives a restart: it is on disk, not in memory.
    expect(
      (await openInbox().page(temp.ws, ALICE, { unacked: true })).notifications.map((n) => n.id),
    ).toEqual([two.id]);
  });

  it("reads only the entries its reader may see: another member's are never opened", async () => {
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    await inbox.post(temp.ws, "t", { title: "for everyone" });
    for (let i = 1; i <= 3; i += 1) await inbox.post(temp.ws, "t", { title: `bob ${i}`, to: BOB });
    // Bob's entries made unreadable: a page for Alice that opened them would fail.
    const entries = join(temp.layout.partition("notifications").dir(temp.ws), "entries");
    for (const file of await readdir(entries)) {
      if (file.includes(BOB)) await writeFile(join(entries, file), "{ not json");
    }
    const alices = await inbox.page(temp.ws, ALICE);
    expect(alices.notifications.map((n) => n.title)).toEqual(["for everyone"]);
    await expect(inbox.page(temp.ws, BOB)).rejects.toThrow("is not valid JSON");
  });

  it("acknowledges many ids at once: each new one counted once, and one it cannot find refuses them all", async () => {
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    const ids: string[] = [];
    for (let i = 1; i <= 5; i += 1) ids.push((await inbox.post(temp.ws, "t", { title: `n${i}` })).id);
    const bobs = (await inbox.post(temp.ws, "t", { title: "bob's", to: BOB })).id;
    const [one, two, three, four, five] = ids as [string, string, string, string, string];
    const unacked = async (who: string) =>
      (await inbox.page(temp.ws, who, { unacked: true })).notifications.map((n) => n.title);

    expect(await inbox.ack(temp.ws, ALICE, { ids: [one, two, one, three, two] }, NO_CALLER)).toEqual({
      acked: 3,
    });
    expect(await inbox.ack(temp.ws, ALICE, { ids: [three, four, four] }, NO_CALLER)).toEqual({ acked: 1 });
    const unknown = `ntf_${"0".repeat(24)}`;
    for (const stranger of [unknown, bobs, "../../etc/passwd"]) {
      await expect(inbox.ack(temp.ws, ALICE, { ids: [five, stranger, five] }, NO_CALLER)).rejects.toThrow(
        `No notification ${JSON.stringify(stranger)}`,
      );
    }
    expect(await unacked(ALICE)).toEqual(["n5"]);
    expect(await unacked(BOB)).toEqual(["bob's", "n5", "n4", "n3", "n2", "n1"]);
    expect(await inbox.ack(temp.ws, BOB, { ids: [bobs, five, bobs] }, NO_CALLER)).toEqual({ acked: 2 });
    expect(await unacked(BOB)).toEqual(["n4", "n3", "n2", "n1"]);
  });

  it("lists the entries once for an ack of many ids, not once per id", async () => {
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    const ids: string[] = [];
    for (let i = 1; i <= 30; i += 1) ids.push((await inbox.post(temp.ws, "t", { title: `n${i}` })).id);
    // The seq is known from the posts, so the ids are all the ack lists for.
    const listings = await entryListingsDuring(async () => {
      expect(await inbox.ack(temp.ws, ALICE, { ids }, NO_CALLER)).toEqual({ acked: 30 });
    });
    expect(listings).toBe(1);
  });

  it("forgets the acknowledgement of an entry that is gone, so a member's file holds no more than the inbox", async () => {
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 10 });
    // Alice's own entry, never acknowledged, stays while entries for everyone come and go: each
    // one she acknowledges by id cannot join the acknowledged run that starts below it.
    await inbox.post(temp.ws, "tasks", { title: "alice's", to: ALICE });
    for (let i = 1; i <= 40; i += 1) {
      const entry = await inbox.post(temp.ws, "t", { title: `n${i}` });
      expect(await inbox.ack(temp.ws, ALICE, { ids: [entry.id] }, NO_CALLER)).toEqual({ acked: 1 });
    }
    const held = await new MemberAcks(temp.layout.partition("notifications")).read(temp.ws, ALICE);
    expect(held).toEqual({ upToSeq: 0, seqs: [33, 34, 35, 36, 37, 38, 39, 40, 41] });
    expect((await inbox.page(temp.ws, ALICE, { unacked: true })).notifications.map((n) => n.title)).toEqual([
      "alice's",
    ]);
  });

  it("an ack of all keeps an ack by id of an entry posted after it listed the inbox", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "t", { title: "one" });
    // The interleaving, step by step: an ack of all listed up to seq 1; before it records, seq 2
    // is posted and Alice acknowledges it by id; then the ack of all records what it listed.
    const second = await inbox.post(temp.ws, "t", { title: "two" });
    await inbox.ack(temp.ws, ALICE, { ids: [second.id] }, NO_CALLER);
    const acks = new MemberAcks(temp.layout.partition("notifications"));
    expect(await acks.record(temp.ws, ALICE, { upTo: 1, visible: [1] }, NO_CALLER)).toEqual({ acked: 1 });
    expect(await acks.read(temp.ws, ALICE)).toEqual({ upToSeq: 2, seqs: [] });
    expect((await inbox.page(temp.ws, ALICE, { unacked: true })).notifications).toEqual([]);
  });

  it("answers an unknown, malformed or hostile id with not found, and a bad cursor with what to do", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "t", { title: "one" });
    for (const id of [`ntf_${"0".repeat(24)}`, "ntf_x", "../../etc/passwd"]) {
      await expect(inbox.get(temp.ws, ALICE, id)).rejects.toThrow("No notification");
      await expect(inbox.ack(temp.ws, ALICE, { ids: [id] }, NO_CALLER)).rejects.toThrow("No notification");
    }
    await expect(inbox.page(temp.ws, ALICE, { cursor: "abc" })).rejects.toThrow("list again from the start");
  });
});

describe("retention and recovery", () => {
  it("removes entries past their age, then the oldest past the count, and keeps the rest", async () => {
    const inbox = openInbox({ retentionDays: 1, maxPerWorkspace: 10 });
    await inbox.post(temp.ws, "t", { title: "old" });
    time.jump(2 * DAY_MS);
    for (let i = 1; i <= 5; i += 1) await inbox.post(temp.ws, "t", { title: `n${i}` });
    expect(await inbox.prune(temp.ws)).toBe(1);
    const titles = (await inbox.page(temp.ws, ALICE, { limit: 100 })).notifications.map((n) => n.title);
    expect(titles).toEqual(["n5", "n4", "n3", "n2", "n1"]);
    expect(await inbox.prune(temp.ws)).toBe(0);
    // Over a count lowered since (a new setting at restart): the oldest go.
    expect(await openInbox({ retentionDays: 1, maxPerWorkspace: 3 }).prune(temp.ws)).toBe(2);
  });

  it("holds the count as each entry is posted, the flooding addressee's own oldest going first", async () => {
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 5 });
    await inbox.post(temp.ws, "tasks", { title: "alice's failure", to: ALICE });
    await inbox.post(temp.ws, "connections", { title: "for everyone" });
    for (let i = 1; i <= 20; i += 1) await inbox.post(temp.ws, "tasks", { title: `bob ${i}`, to: BOB });
    const titles = async (who: string) =>
      (await inbox.page(temp.ws, who, { limit: 100 })).notifications.map((n) => n.title);
    expect(await readdir(join(temp.layout.partition("notifications").dir(temp.ws), "entries"))).toHaveLength(
      5,
    );
    expect(await titles(ALICE)).toEqual(["for everyone", "alice's failure"]);
    expect(await titles(BOB)).toEqual(["bob 20", "bob 19", "bob 18", "for everyone"]);
    // Someone new with nothing older makes room from the largest stream, not from alice's.
    const CAROL = `usr_${"c".repeat(24)}`;
    await inbox.post(temp.ws, "tasks", { title: "carol's", to: CAROL });
    expect(await titles(ALICE)).toEqual(["for everyone", "alice's failure"]);
    expect(await titles(BOB)).toEqual(["bob 20", "bob 19", "for everyone"]);
    expect(await titles(CAROL)).toEqual(["carol's", "for everyone"]);
  });

  it("upgrades an inbox written before names carried the addressee, even one cut short", async () => {
    const written = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    await written.post(temp.ws, "t", { title: "for everyone" });
    await written.post(temp.ws, "t", { title: "bob 1", to: BOB });
    await written.post(temp.ws, "t", { title: "bob 2", to: BOB });
    const dir = temp.layout.partition("notifications").dir(temp.ws);
    const entries = join(dir, "entries");
    // The older layout: no mark, and bob 1 named as every entry was. bob 2 keeps its new name,
    // as an upgrade cut short between its renames would have left it.
    await rm(join(dir, "names.json"));
    const bob1 = (await readdir(entries)).find((f) => f.startsWith("000000000002-")) as string;
    await rename(join(entries, bob1), join(entries, bob1.replace(`-${BOB}`, "")));

    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    const titles = async (who: string) =>
      (await inbox.page(temp.ws, who, { limit: 100 })).notifications.map((n) => n.title);
    expect(await titles(ALICE)).toEqual(["for everyone"]);
    expect(await titles(BOB)).toEqual(["bob 2", "bob 1", "for everyone"]);
    expect((await readdir(entries)).filter((f) => f.endsWith(`-${BOB}.json`))).toHaveLength(2);
    expect(await readdir(dir)).toContain("names.json");
  });

  it("upgrades the rest of an older inbox around an entry that does not parse", async () => {
    const written = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    await written.post(temp.ws, "t", { title: "damaged" });
    const bobs = await written.post(temp.ws, "t", { title: "bob's", to: BOB });
    const dir = temp.layout.partition("notifications").dir(temp.ws);
    const entries = join(dir, "entries");
    await rm(join(dir, "names.json"));
    for (const file of await readdir(entries)) {
      if (file.startsWith("000000000001-")) await writeFile(join(entries, file), "{");
      else await rename(join(entries, file), join(entries, file.replace(`-${BOB}`, "")));
    }
    const inbox = openInbox({ retentionDays: 30, maxPerWorkspace: 100 });
    expect((await inbox.get(temp.ws, BOB, bobs.id)).title).toBe("bob's");
    await expect(inbox.get(temp.ws, ALICE, bobs.id)).rejects.toThrow("No notification");
    expect((await readdir(entries)).filter((f) => f.endsWith(`-${BOB}.json`))).toHaveLength(1);
    expect(await readdir(dir)).toContain("names.json");
    // The damaged entry is still there, and whoever reaches it is told so.
    await expect(inbox.page(temp.ws, ALICE)).rejects.toThrow("is not valid JSON");
  });

  it("sweeps a temp file an interrupted write left, and nothing else", async () => {
    const inbox = openInbox();
    await inbox.post(temp.ws, "t", { title: "kept" });
    const entries = join(temp.root, temp.ws, "notifications", "entries");
    await writeFile(join(entries, ".tmp-000000000002-x.json-abcd"), "{");
    await inbox.recoverWorkspace(temp.ws, new Set(["notifications"]), RecoveryPass.boot(time.clock()));
    expect(await readdir(entries)).toEqual([expect.stringMatching(/^000000000001-ntf_/)]);
  });
});
