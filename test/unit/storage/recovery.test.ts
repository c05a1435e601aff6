import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventBus } from "../../../src/kernel/events.ts";
import { createLogger } from "../../../src/log.ts";
import { FileStore } from "../../../src/platform/files/store.ts";
import { SkillWriter } from "../../../src/platform/skills/writer.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { RecoveryPass, recoverDataRoot } from "../../../src/storage/recovery.ts";
import { NO_CALLER } from "../../../src/workspace/access-check.ts";
import { WorkspaceStore } from "../../../src/workspace/store.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const log = createLogger("silent");
const events = new EventBus(log);

let root: string;
let layout: StorageLayout;
let workspaces: WorkspaceStore;
let files: FileStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-recovery-"));
  layout = new StorageLayout(root);
  workspaces = new WorkspaceStore(layout, events);
  await workspaces.load();
  files = new FileStore(layout.partition("files"), 1024 * 1024, events);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function recover(pass: RecoveryPass) {
  const rules = [files, new SkillWriter(layout, workspaces, events)];
  return recoverDataRoot(layout, workspaces.ids(), rules, pass, log);
}

describe("housekeeping never removes what a live writer of this process uses", () => {
  it("an upload still streaming keeps its staging folder, even with no age bound, and then lands", async () => {
    const ws = await workspaces.create("W", ALICE);
    let push!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = controller;
      },
    });
    const upload = files.upload(ws.id, ALICE, { name: "slow.bin" }, body, NO_CALLER);
    push.enqueue(new Uint8Array([1, 2, 3]));
    const ownerDir = layout.ownerDir(ws.id, "files", ALICE);
    // Wait (bounded) until the upload has made its staging folder.
    for (let i = 0; i < 200 && !(await readdir(ownerDir).catch(() => [])).length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect((await readdir(ownerDir))[0]).toMatch(/^\.tmp-fl_/);

    await recover(new RecoveryPass(false, 0, Date.now()));

    push.enqueue(new Uint8Array([4]));
    push.close();
    const meta = await upload;
    expect(meta.size).toBe(4);
    expect(await readdir(ownerDir)).toEqual([meta.id]);
  });

  it("a temp file younger than the bound is left; an older one is removed", async () => {
    const ws = await workspaces.create("W", ALICE);
    const young = join(layout.workspaceDir(ws.id), ".tmp-workspace.json-0a0b0c0d0e0f");
    const old = join(layout.workspaceDir(ws.id), ".tmp-workspace.json-0f0e0d0c0b0a");
    await writeFile(young, "{");
    await writeFile(old, "{");
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(old, twoHoursAgo, twoHoursAgo);

    const pass = await recover(RecoveryPass.housekeeping(Date.now()));
    expect(existsSync(young)).toBe(true);
    expect(existsSync(old)).toBe(false);
    expect(pass.removed).toBe(1);
  });

  it("a leftover's age is measured from the pass's clock reading, not from the system time", async () => {
    const ws = await workspaces.create("W", ALICE);
    const fresh = join(layout.workspaceDir(ws.id), ".tmp-workspace.json-0a0b0c0d0e0f");
    await writeFile(fresh, "{");
    await recover(RecoveryPass.housekeeping(Date.now()));
    expect(existsSync(fresh)).toBe(true);
    // The instance clock reads two hours later: the same file is now old enough to be nobody's.
    const pass = await recover(RecoveryPass.housekeeping(Date.now() + 2 * 60 * 60 * 1000));
    expect(existsSync(fresh)).toBe(false);
    expect(pass.removed).toBe(1);
  });
});
