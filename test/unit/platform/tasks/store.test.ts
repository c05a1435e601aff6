import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bodyDigest } from "../../../../src/platform/tasks/idempotency.ts";
import type { Unfinished } from "../../../../src/platform/tasks/loaded.ts";
import { newRunId, type Run, type Task } from "../../../../src/platform/tasks/model.ts";
import { TaskStore } from "../../../../src/platform/tasks/store.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { gate } from "../../../helpers/gate.ts";
import { memoryLog } from "../../../helpers/memory-log.ts";
import { runRecord, taskRecord } from "../../../helpers/task-records.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// The store loads a workspace's tasks on first use and drops them when idle; whatever was written
// meanwhile is read back from disk, and boot reads only the instance-wide index (ADR 0056).

const IDLE_MS = 60_000;
const HOUR_MS = 3_600_000;
const owner = `usr_${"a".repeat(24)}`;

let t: TempRoot;
let time: FakeTime;
let found: Unfinished[];
let orphaned: Run[];
/** The result files of the runs a store discarded, and whether each could be (ResultFiles.discard). */
let discarded: string[];
let canDiscard: boolean;

function openStore(log = memoryLog().log): TaskStore {
  const store = new TaskStore(t.layout.partition("tasks"), t.layout, {
    clock: time.clock,
    log,
    idempotencyWindowMs: HOUR_MS,
    idleMs: IDLE_MS,
    results: {
      discard: async (run) => {
        if (run.resultFile) discarded.push(run.resultFile.id);
        return canDiscard || !run.resultFile;
      },
    },
  });
  store.onLoad({
    loaded: async () => undefined,
    unfinished: async (unfinished) => {
      found.push(...unfinished);
    },
    orphaned: (runs) => {
      orphaned.push(...runs);
    },
  });
  return store;
}

function taskOf(fields: Partial<Task> = {}): Task {
  return taskRecord(t.ws, owner, time.clock(), fields);
}

function runOf(task: Task, fields: Partial<Run> = {}): Run {
  time.jump(1000);
  return runRecord(task, time.clock(), fields);
}

const boot = (store: TaskStore) =>
  store.boot(
    () => [t.ws],
    (ws) => ws === t.ws,
  );

beforeEach(async () => {
  t = await openTempRoot("task-store", owner);
  time = new FakeTime(Date.UTC(2026, 0, 1));
  found = [];
  orphaned = [];
  discarded = [];
  canDiscard = true;
});
afterEach(() => t.remove());

describe("TaskStore", () => {
  it("drops an idle workspace and reads it back whole: tasks, run order and idempotency keys", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const keyed = runOf(task, {
      idempotency: {
        key: "k",
        bodyDigest: bodyDigest({}),
        expiresAt: new Date(time.clock() + HOUR_MS).toISOString(),
      },
    });
    const first = await store.createRun(keyed, NO_CALLER);
    const later = await store.createRun(runOf(task), NO_CALLER);
    expect(await store.runIds(task)).toEqual([later.id, keyed.id]);
    expect(store.loadedCount).toBe(1);

    time.jump(IDLE_MS);
    await store.sweepIdle();
    expect(store.loadedCount).toBe(0);
    // A start after the drop reads the runs back from disk first, to number the new one after them.
    const newest = await store.createRun(runOf(task), NO_CALLER);
    expect([first, later, newest].map((run) => run.sequence)).toEqual([1, 2, 3]);
    expect(await store.all(t.ws)).toEqual([{ ...task, lastSequence: 3 }]);
    expect(await store.runIds(task)).toEqual([newest.id, later.id, keyed.id]);
    expect((await store.run(t.ws, keyed.id))?.id).toBe(keyed.id);
    const scope = { taskId: task.id, principalId: owner };
    const replayed = await store.withKeys(t.ws, (keys) =>
      keys.once(scope, "k", bodyDigest({}), async () => {
        throw new Error("a key in its window must not start a run");
      }),
    );
    expect(replayed).toEqual({ replayOf: keyed.id });
    await store.close();
  });

  it("runs recorded before sequences are read back as the oldest, by startedAt, and the next run is numbered after the highest kept", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const runs = join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs");
    await mkdir(runs, { recursive: true });
    // Written before runs had a sequence: the one started second has the later startedAt.
    const older = runOf(task);
    const old = runOf(task);
    for (const run of [old, older]) await writeFile(join(runs, `${run.id}.json`), JSON.stringify(run));
    const numbered = await store.createRun(runOf(task), NO_CALLER);
    // The wall clock stepped back an hour: this run's startedAt is the earliest of all.
    time.jump(-HOUR_MS);
    const stepped = await store.createRun(runOf(task), NO_CALLER);
    expect([numbered.sequence, stepped.sequence]).toEqual([1, 2]);
    await store.close();

    const again = openStore();
    await boot(again);
    expect(await again.runIds(task)).toEqual([stepped.id, numbered.id, old.id, older.id]);
    expect((await again.createRun(runOf(task), NO_CALLER)).sequence).toBe(3);
    await again.close();
  });

  describe("a task's high-water sequence (ADR 0171)", () => {
    // A first start after a boot or an idle drop read every run of the workspace for its task's
    // next sequence (2,000 runs: ≈ 0.3–0.5 s before it answered), and could not count a run whose
    // record could not be read, nor one removed.
    const runsDir = () => join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs");
    const taskFile = (task: Task) =>
      join(t.layout.partition("tasks").ownerDir(t.ws, owner), `${task.id}.json`);

    it("a start after a restart numbers its run from the task's record, reading no run", async () => {
      const log = memoryLog();
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf({ lastSequence: 0 }), NO_CALLER);
      await store.createRun(runOf(task), NO_CALLER);
      await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      // A record the runs' read would log, to see whether they were read.
      await writeFile(join(runsDir(), `${newRunId()}.json`), "{");
      const again = openStore(log.log);
      await boot(again);
      expect((await again.createRun(runOf(task), NO_CALLER)).sequence).toBe(3);
      expect(log.lines.filter((line) => String(line.msg).startsWith("task run left out"))).toEqual([]);
      expect((await again.taskIn(t.ws, task.id))?.lastSequence).toBe(3);
      await again.close();
    });

    it("stays past a removed newest run, and past a run whose record cannot be read", async () => {
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf({ lastSequence: 0 }), NO_CALLER);
      const first = await store.createRun(runOf(task), NO_CALLER);
      const second = await store.createRun(runOf(task), NO_CALLER);
      const third = await store.createRun(runOf(task), NO_CALLER);
      await store.forgetRuns(task, [third.id]);
      await store.close();
      await rm(join(runsDir(), `${second.id}.json`));
      await mkdir(join(runsDir(), `${second.id}.json`));

      const again = openStore();
      await boot(again);
      // Read from the runs, the next was 2: the unreadable run's, and the removed one's after it.
      const next = await again.createRun(runOf(task), NO_CALLER);
      expect(next.sequence).toBe(4);
      expect(await again.runIds(task)).toEqual([next.id, first.id]);
      await again.close();
    });

    it("a record restored below its runs: a start counts the runs in memory, reading none for it (review 60)", async () => {
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf({ lastSequence: 0 }), NO_CALLER);
      const backup = await readFile(taskFile(task), "utf8");
      for (let i = 0; i < 3; i++) await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      await writeFile(taskFile(task), backup);

      const again = openStore();
      await boot(again);
      // A listing read the runs: a start then counts them, not only the restored record.
      expect(await again.runIds(task)).toHaveLength(3);
      expect((await again.createRun(runOf(task), NO_CALLER)).sequence).toBe(4);
      expect((JSON.parse(await readFile(taskFile(task), "utf8")) as Task).lastSequence).toBe(4);
      await again.close();
    });

    it("a run's end renumbers a run started below its runs past them, its record raised with it (TaskStore.raiseSequence)", async () => {
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf({ lastSequence: 0 }), NO_CALLER);
      const backup = await readFile(taskFile(task), "utf8");
      for (let i = 0; i < 3; i++) await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      await writeFile(taskFile(task), backup);

      const again = openStore();
      await boot(again);
      // A first start reads no run (ADR 0171): the restored counter is all it knows.
      const below = await again.createRun(runOf(task), NO_CALLER);
      expect(below.sequence).toBe(1);
      await again.raiseSequence(task, below);
      // Renumbered past the runs kept, the record first: the newest it is, the next prune keeps it.
      expect((await again.taskIn(t.ws, task.id))?.lastSequence).toBe(4);
      expect((JSON.parse(await readFile(taskFile(task), "utf8")) as Task).lastSequence).toBe(4);
      expect((await again.run(t.ws, below.id))?.sequence).toBe(4);
      expect((await again.runIds(task))[0]).toBe(below.id);
      expect((await again.createRun(runOf(task), NO_CALLER)).sequence).toBe(5);
      await again.close();
    });

    it("a run's end renumbers nothing past a safe integer (a run's sequence written so by hand)", async () => {
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf({ lastSequence: 0 }), NO_CALLER);
      const backup = await readFile(taskFile(task), "utf8");
      const edited = await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      const top = Number.MAX_SAFE_INTEGER;
      await writeFile(join(runsDir(), `${edited.id}.json`), JSON.stringify({ ...edited, sequence: top }));
      await writeFile(taskFile(task), backup);

      const again = openStore();
      await boot(again);
      const below = await again.createRun(runOf(task), NO_CALLER);
      expect(below.sequence).toBe(1);
      await again.raiseSequence(task, below);
      expect((JSON.parse(await readFile(taskFile(task), "utf8")) as Task).lastSequence).toBe(1);
      expect((await again.run(t.ws, below.id))?.sequence).toBe(1);
      await again.close();
    });

    it("a task stored before it was kept takes it from its runs once, then keeps it", async () => {
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf(), NO_CALLER);
      const older = await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      const file = join(t.layout.partition("tasks").ownerDir(t.ws, owner), `${task.id}.json`);
      const { lastSequence: _dropped, ...before } = JSON.parse(await readFile(file, "utf8")) as Task;
      await writeFile(file, JSON.stringify(before));
      await writeFile(join(runsDir(), `${older.id}.json`), JSON.stringify({ ...older, sequence: 7 }));

      const again = openStore();
      await boot(again);
      expect((await again.createRun(runOf(task), NO_CALLER)).sequence).toBe(8);
      expect((JSON.parse(await readFile(file, "utf8")) as Task).lastSequence).toBe(8);
      await again.close();
    });
  });

  it("a run of another workspace, or of no task, is not found", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const run = await store.createRun(runOf(task), NO_CALLER);
    const other = (await t.workspaces.create("Other", owner)).id;
    expect(await store.run(other, run.id)).toBeUndefined();
    expect(await store.run(t.ws, newRunId())).toBeUndefined();
    await store.delete(
      task,
      () => undefined,
      NO_CALLER,
      async () => undefined,
    );
    expect(await store.run(t.ws, run.id)).toBeUndefined();
    expect(await readdir(join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs"))).toEqual([]);
    await store.close();
  });

  it("boot finds the triggered tasks in the index, drops an entry whose task lost its trigger, ignores strays", async () => {
    const store = openStore();
    await boot(store);
    const hourly = await store.create(taskOf({ trigger: { everySeconds: 3600 } }), NO_CALLER);
    const untriggered = await store.create(
      taskOf({ trigger: { cron: "0 * * * *", timezone: "UTC" } }),
      NO_CALLER,
    );
    await store.update(untriggered, ({ trigger: _gone, ...rest }) => rest, NO_CALLER);
    const plain = await store.create(taskOf(), NO_CALLER);
    await store.close();
    const schedules = join(t.layout.instanceDir(), "tasks", "schedules");
    // What a crash between the entry and the task's write leaves: an entry for a task with no trigger.
    await writeFile(join(schedules, `${t.ws}-${owner}-${plain.id}.json`), "{}");
    await writeFile(join(schedules, "not-an-entry.json"), "{}");

    const again = openStore();
    expect((await boot(again)).map((task) => task.id)).toEqual([hourly.id]);
    expect(again.loadedCount).toBe(0);
    expect((await readdir(schedules)).filter((name) => name.startsWith("ws_"))).toEqual([
      `${t.ws}-${owner}-${hourly.id}.json`,
    ]);
    await again.close();
  });

  it("two updates at once leave the schedule entry, the loaded task and the caller's copy as the later wrote them", async () => {
    const store = openStore();
    await boot(store);
    const trigger = { everySeconds: 3600 };
    const task = await store.create(taskOf({ trigger }), NO_CALLER);
    // The workspace is loading (its first use after an idle eviction) while the updates run: the
    // first is held after its write, waiting for the load, while the second runs.
    const loading = gate();
    store.onLoad({
      loaded: () => loading.promise,
      unfinished: async () => undefined,
      orphaned: () => undefined,
    });
    const reading = store.all(t.ws);
    const entryBack = gate();
    const addSchedule = store.index.addSchedule.bind(store.index);
    store.index.addSchedule = async (entry) => {
      await addSchedule(entry);
      entryBack.open();
    };
    const committed: (Task["trigger"] | "none")[] = [];
    const seen = (next: Task) => void committed.push(next.trigger ?? "none");
    const untrigger = store.update(task, ({ trigger: _gone, ...rest }) => rest, NO_CALLER, seen);
    const retrigger = store.update(task, (current) => ({ ...current, trigger }), NO_CALLER, seen);
    // Without one lock over the whole update, the second puts its entry back while the first
    // waits, and the first then removes it. With it, the second waits for the first instead.
    await Promise.race([entryBack.promise, new Promise((resolve) => setTimeout(resolve, 300))]);
    loading.open();
    await Promise.all([untrigger, retrigger, reading]);

    expect(committed).toEqual(["none", trigger]);
    expect((await store.taskIn(t.ws, task.id))?.trigger).toEqual(trigger);
    const schedules = join(t.layout.instanceDir(), "tasks", "schedules");
    expect(await readdir(schedules)).toContain(`${t.ws}-${owner}-${task.id}.json`);
    await store.close();
    expect((await boot(openStore())).map((armed) => armed.id)).toEqual([task.id]);
  });

  it("an instance whose tasks predate the index builds it once, from the definitions", async () => {
    const store = openStore();
    await boot(store);
    const hourly = await store.create(taskOf({ trigger: { everySeconds: 3600 } }), NO_CALLER);
    await store.close();
    await rm(join(t.layout.instanceDir(), "tasks"), { recursive: true });
    expect((await boot(openStore())).map((task) => task.id)).toEqual([hourly.id]);
    expect((await boot(openStore())).map((task) => task.id)).toEqual([hourly.id]);
  });

  it("the index's first build indexes a copied or damaged task file at its path, never at the ids its text names; boot arms neither", async () => {
    // The build took a copy's entry from its text (the original's place) and stopped the boot on a
    // record that did not parse.
    const store = openStore();
    await boot(store);
    const hourly = await store.create(taskOf({ trigger: { everySeconds: 3600 } }), NO_CALLER);
    const damaged = await store.create(taskOf({ trigger: { everySeconds: 3600 } }), NO_CALLER);
    await store.close();
    const other = (await t.workspaces.create("Other", owner)).id;
    const tasks = t.layout.partition("tasks");
    await mkdir(tasks.ownerDir(other, owner), { recursive: true });
    await copyFile(
      join(tasks.ownerDir(t.ws, owner), `${hourly.id}.json`),
      join(tasks.ownerDir(other, owner), `${hourly.id}.json`),
    );
    await writeFile(join(tasks.ownerDir(t.ws, owner), `${damaged.id}.json`), "{");
    await rm(join(t.layout.instanceDir(), "tasks"), { recursive: true });

    const rebooted = (ws: string) => ws === t.ws || ws === other;
    const again = openStore();
    const armed = await again.boot(() => [t.ws, other], rebooted);
    expect(armed.map((task) => `${task.workspaceId} ${task.id}`)).toEqual([`${t.ws} ${hourly.id}`]);
    const schedules = join(t.layout.instanceDir(), "tasks", "schedules");
    expect((await readdir(schedules)).filter((name) => name.startsWith("ws_")).sort()).toEqual(
      [
        `${t.ws}-${owner}-${hourly.id}.json`,
        `${t.ws}-${owner}-${damaged.id}.json`,
        `${other}-${owner}-${hourly.id}.json`,
      ].sort(),
    );
    await again.close();
  });

  it("a workspace a crash left marked is loaded at boot and its running runs handed over; a graceful close leaves no mark", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const running = await store.createRun(runOf(task, { execution: { status: "running" } }), NO_CALLER);
    // No close: what a crash leaves.
    const afterCrash = openStore();
    await boot(afterCrash);
    expect(found.map(({ run }) => run.id)).toEqual([running.id]);
    expect(afterCrash.loadedCount).toBe(1);
    await afterCrash.close();
    await store.close();
    found = [];
    await boot(openStore());
    expect(found).toEqual([]);
    expect(await readdir(join(t.layout.instanceDir(), "tasks", "running"))).toEqual([]);
  });

  it("a forgotten run's result file goes before its record; a record whose file could not go stays for the next prune", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const runsDir = join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs");
    const old = await store.createRun(runOf(task, { resultFile: { id: "fl_old", size: 2000 } }), NO_CALLER);
    const stuck = await store.createRun(
      runOf(task, { resultFile: { id: "fl_stuck", size: 2000 } }),
      NO_CALLER,
    );
    const kept = await store.createRun(runOf(task), NO_CALLER);
    // As the runner prunes: past what the task keeps in the run order it has read.
    expect(await store.runIds(task)).toEqual([kept.id, stuck.id, old.id]);
    await store.forgetRuns(task, [old.id]);
    expect(discarded).toEqual(["fl_old"]);
    // The owner left, say: the file cannot be deleted, so the record that names it is kept.
    canDiscard = false;
    await store.forgetRuns(task, [stuck.id]);
    expect(await store.runIds(task)).toEqual([kept.id]);
    expect((await readdir(runsDir)).sort()).toEqual([`${kept.id}.json`, `${stuck.id}.json`].sort());
    // Read again after an eviction, it is listed again, past what the task keeps: the next prune tries again.
    time.jump(IDLE_MS);
    await store.sweepIdle();
    expect(await store.runIds(task)).toEqual([kept.id, stuck.id]);
    await store.close();
  });

  it("runs whose task is gone are left out of a read and handed over to be forgotten, with their files", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const other = await store.create(taskOf(), NO_CALLER);
    const run = await store.createRun(
      runOf(task, { resultFile: { id: "fl_orphan", size: 2000 } }),
      NO_CALLER,
    );
    await store.close();
    // A crash in the task's removal, after its record went and before its runs did.
    await rm(join(t.layout.partition("tasks").ownerDir(t.ws, owner), `${task.id}.json`));
    const again = openStore();
    await boot(again);
    expect(await again.runIds(other)).toEqual([]);
    expect(orphaned.map((found) => found.id)).toEqual([run.id]);
    await again.forgetOrphans(orphaned);
    expect(discarded).toEqual(["fl_orphan"]);
    expect(await readdir(join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs"))).toEqual([]);
    await again.close();
  });

  it("the runs of a task whose record does not parse are not forgotten: they are there when it is restored", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const run = await store.createRun(runOf(task, { resultFile: { id: "fl_kept", size: 2000 } }), NO_CALLER);
    await store.close();
    const ownerDir = t.layout.partition("tasks").ownerDir(t.ws, owner);
    await writeFile(join(ownerDir, `${task.id}.json`), "{");
    const again = openStore();
    await boot(again);
    expect(await again.all(t.ws)).toEqual([]);
    expect(await again.run(t.ws, run.id)).toBeUndefined();
    expect(orphaned.map((found) => found.id)).toEqual([run.id]);
    await again.forgetOrphans(orphaned);
    expect(discarded).toEqual([]);
    expect(await readdir(join(ownerDir, "runs"))).toEqual([`${run.id}.json`]);
    await again.close();
  });

  it("a task whose record cannot be read is left out, its runs kept, and is back at the load after an idle drop once it reads", async () => {
    // A read that failed other than by not parsing failed the load of every task of the workspace.
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const other = await store.create(taskOf(), NO_CALLER);
    const run = await store.createRun(runOf(task), NO_CALLER);
    time.jump(IDLE_MS);
    await store.sweepIdle();
    const file = join(t.layout.partition("tasks").ownerDir(t.ws, owner), `${task.id}.json`);
    await rename(file, `${file}.aside`);
    await mkdir(file);

    expect(await store.all(t.ws)).toEqual([other]);
    expect(await store.leftOut(t.ws, task.id)).toEqual({ id: task.id, ownerId: owner });
    expect(await store.runIds(other)).toEqual([]);
    await store.forgetOrphans(orphaned);
    expect(orphaned.map((found) => found.id)).toEqual([run.id]);
    await rm(file, { recursive: true });
    await rename(`${file}.aside`, file);
    // Seen at the next load, not before.
    expect(await store.taskIn(t.ws, task.id)).toBeUndefined();
    time.jump(IDLE_MS);
    await store.sweepIdle();
    expect((await store.all(t.ws)).map((back) => back.id).sort()).toEqual([task.id, other.id].sort());
    expect(await store.runIds(task)).toEqual([run.id]);
    expect((await store.createRun(runOf(task), NO_CALLER)).sequence).toBe(2);
    await store.close();
  });

  it.each([
    ["no startedAt", { startedAt: undefined }],
    ["an execution that is null", { execution: null }],
    ["a taskId that is not a task id", { taskId: "../tsk" }],
    ["another owner's id", { ownerId: `usr_${"b".repeat(24)}` }],
  ])(
    "a run record with %s is left out of a read of the runs, neither listed nor forgotten",
    async (_, fields) => {
      // Each failed the read of every run of the workspace (a sort by startedAt, a look at the
      // status), or was handed over as an orphan whose task could not be named.
      const store = openStore();
      await boot(store);
      const task = await store.create(taskOf(), NO_CALLER);
      const kept = await store.createRun(runOf(task), NO_CALLER);
      const odd = await store.createRun(runOf(task), NO_CALLER);
      await store.close();
      const runs = join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs");
      await writeFile(join(runs, `${odd.id}.json`), JSON.stringify({ ...odd, ...fields }));
      const again = openStore();
      await boot(again);
      expect(await again.runIds(task)).toEqual([kept.id]);
      expect(await again.run(t.ws, odd.id)).toBeUndefined();
      expect(orphaned).toEqual([]);
      await again.close();
    },
  );

  it("a task whose run record stopped parsing is deleted with it; the record's result file cannot be named", async () => {
    const store = openStore();
    await boot(store);
    const task = await store.create(taskOf(), NO_CALLER);
    const run = await store.createRun(
      runOf(task, { resultFile: { id: "fl_unnamed", size: 2000 } }),
      NO_CALLER,
    );
    expect(await store.runIds(task)).toEqual([run.id]);
    const runs = join(t.layout.partition("tasks").ownerDir(t.ws, owner), "runs");
    await writeFile(join(runs, `${run.id}.json`), "{");
    expect(await store.run(t.ws, run.id)).toBeUndefined();
    await store.delete(
      task,
      () => undefined,
      NO_CALLER,
      async () => undefined,
    );
    expect(discarded).toEqual([]);
    expect(await readdir(runs)).toEqual([]);
    await store.close();
  });
});
