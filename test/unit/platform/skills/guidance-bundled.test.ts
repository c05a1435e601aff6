import { renameSync, symlinkSync } from "node:fs";
import { link, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { createWorkspaceGuidance } from "../../../../src/platform/skills/guidance.ts";
import { SkillService } from "../../../../src/platform/skills/service.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A bundled file is listed only when it is a regular file (a symlink beside SKILL.md is skipped),
// and checked again when it is read: one swapped for a symlink after that check must not be
// followed to wherever it points, outside the data root (adr/0139).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
const SKILL = "---\nname: guide\ndescription: A guide.\n---\nRead ref.md.\n";

let temp: TempRoot;
let outside: string;

beforeEach(async () => {
  temp = await openTempRoot("skill-bundled", ALICE);
  outside = await mkdtemp(join(tmpdir(), "atrium-outside-"));
});

afterEach(async () => {
  await temp.remove();
  await rm(outside, { recursive: true, force: true });
});

/** Runs `work`, replacing `path` with a symlink to `target` right after its first lstat. */
async function linkedAfterCheck<T>(path: string, target: string, work: () => Promise<T>): Promise<T> {
  let swapped = false;
  try {
    return await withFsHook(
      "lstat",
      (real) =>
        async (checked, ...rest) => {
          const info = await real(checked, ...rest);
          if (!swapped && checked === path) {
            swapped = true;
            await rm(path);
            await symlink(target, path);
          }
          return info;
        },
      work,
    );
  } finally {
    expect(swapped, `${path} was swapped for a symlink`).toBe(true);
  }
}

/** The workspace guidance over a skill service of `platform`'s skills and, when given, `orgDir`'s. */
function openGuidance(platform: string, orgDir?: string) {
  const service = new SkillService(
    temp.layout,
    { orgDir, maxInstructionsBytes: 32 * 1024 },
    createLogger("silent"),
    platform,
  );
  return { service, guidance: createWorkspaceGuidance(service) };
}

/** Sets the times of `paths` a minute back: old enough that a kept listing is trusted (scope-cache.ts RACY_MS). */
async function makeOld(paths: string[]): Promise<void> {
  const old = new Date(Date.now() - 60_000);
  for (const path of paths) await utimes(path, old, old);
}

/** The workspace skill guide, whose references/a.md says INSIDE, its every listing old. */
async function oldGuideWithReference(): Promise<{ scope: string; refs: string }> {
  const scope = temp.layout.workspaceSkillsDir(temp.ws);
  const folder = join(scope, "guide");
  const refs = join(folder, "references");
  await mkdir(refs, { recursive: true });
  await writeFile(join(folder, "SKILL.md"), SKILL);
  await writeFile(join(refs, "a.md"), "INSIDE");
  await makeOld([join(refs, "a.md"), refs, join(folder, "SKILL.md"), folder, scope]);
  return { scope, refs };
}

const REFERENCE_URI = "skill://workspace/guide/references/a.md";

/**
 * Reads the guide's reference, then, in the turn of a resolve that checked every listing (kept
 * until the next turn, scope-cache.ts), runs `swap` and reads the reference and packages the guide
 * (its digests, its bytes) on the kept listing that still names it: none may read through what
 * `swap` made a symlink.
 */
async function expectNotReadThrough(
  { service, guidance }: ReturnType<typeof openGuidance>,
  swap: () => void,
): Promise<void> {
  const uri = REFERENCE_URI;
  await expect(guidance.readResource?.(temp.ws, ALICE, uri)).resolves.toMatchObject({ text: "INSIDE" });
  await new Promise((resolve) => setImmediate(resolve));
  await service.resolve(temp.ws, ALICE);
  // Synchronously, so the turn does not end in between.
  swap();
  const [read, packages, files] = await Promise.allSettled([
    guidance.readResource?.(temp.ws, ALICE, uri),
    guidance.packages?.(temp.ws, ALICE),
    guidance.packageFiles?.(temp.ws, ALICE, "workspace/guide"),
  ]);
  expect(read).toMatchObject({
    status: "rejected",
    reason: {
      message: expect.stringContaining(
        `${uri} is not served: it is reached through a folder that is a symlink`,
      ),
    },
  });
  // A package without a file it ships would be a different skill: left out whole.
  expect(packages).toEqual({ status: "fulfilled", value: [] });
  expect(files).toEqual({ status: "fulfilled", value: undefined });
}

describe("a bundled file swapped for a symlink after its check", () => {
  it("is not served, and what the link points to is never read", async () => {
    const folder = join(temp.layout.workspaceSkillsDir(temp.ws), "guide");
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, "SKILL.md"), SKILL);
    await writeFile(join(folder, "ref.md"), "REFERENCE");
    await writeFile(join(outside, "secret.txt"), "OUTSIDE-SECRET");
    const { guidance } = openGuidance(await mkdtemp(join(outside, "platform-")));
    const uri = "skill://workspace/guide/ref.md";
    await expect(guidance.readResource?.(temp.ws, ALICE, uri)).resolves.toMatchObject({ text: "REFERENCE" });
    const read = linkedAfterCheck(join(folder, "ref.md"), join(outside, "secret.txt"), async () =>
      guidance.readResource?.(temp.ws, ALICE, uri),
    );
    await expect(read).rejects.toThrow(`${uri} is not served: it is a symlink, which Atrium does not follow`);
  });
});

describe("a bundled file's folder swapped for a symlink after the listing", () => {
  it("is not read through, by a resource read or a package", async () => {
    const { refs } = await oldGuideWithReference();
    await writeFile(join(outside, "a.md"), "OUTSIDE-SECRET");
    const guide = openGuidance(await mkdtemp(join(outside, "platform-")));
    // As when another request of the same turn swapped the folder (an operator's `ln -sfn`).
    await expectNotReadThrough(guide, () => {
      renameSync(refs, `${refs}-old`);
      symlinkSync(outside, refs);
    });
  });
});

describe("a workspace's skills/ swapped for a link after the listing", () => {
  it("is not read through: only an org or platform scope folder may be a link", async () => {
    // The scope folder was pinned with its links resolved at each bundled file's open, so a
    // workspace's own skills/ made a link was read wherever it pointed.
    const { scope } = await oldGuideWithReference();
    await mkdir(join(outside, "elsewhere", "guide", "references"), { recursive: true });
    await writeFile(join(outside, "elsewhere", "guide", "references", "a.md"), "OUTSIDE-SECRET");
    const platform = await mkdtemp(join(outside, "platform-"));
    // Every scope's listing kept, so the resolve reads nothing anew and ends in its turn.
    await makeOld([platform]);
    // As the test above swaps references/.
    await expectNotReadThrough(openGuidance(platform), () => {
      renameSync(scope, `${scope}-old`);
      symlinkSync(join(outside, "elsewhere"), scope);
    });
  });
});

describe("a bundled file with a second name (a hard link)", () => {
  it("is served from the platform's skills, which a package store may install hard-linked, and refused from an org folder", async () => {
    const store = join(outside, "store");
    await mkdir(store);
    await writeFile(join(store, "ab12"), "SHIPPED");
    const platform = join(outside, "platform");
    const org = join(outside, "org");
    for (const [dir, name] of [
      [platform, "shipped"],
      [org, "operators"],
    ] as const) {
      await mkdir(join(dir, name), { recursive: true });
      await writeFile(join(dir, name, "SKILL.md"), SKILL.replace("name: guide", `name: ${name}`));
      await link(join(store, "ab12"), join(dir, name, "ref.md"));
    }
    const { guidance } = openGuidance(platform, org);
    await expect(
      guidance.readResource?.(temp.ws, ALICE, "skill://platform/shipped/ref.md"),
    ).resolves.toMatchObject({ text: "SHIPPED" });
    await expect(guidance.readResource?.(temp.ws, ALICE, "skill://org/operators/ref.md")).rejects.toThrow(
      "skill://org/operators/ref.md is not served: it is a hard link",
    );
  });
});
