import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { FileDigests, MAX_KEPT_DIGESTS } from "../../../../src/platform/skills/file-digests.ts";
import { createWorkspaceGuidance } from "../../../../src/platform/skills/guidance.ts";
import { SkillService } from "../../../../src/platform/skills/service.ts";
import { SkillWriter, type WriteTarget } from "../../../../src/platform/skills/writer.ts";
import { digestOf, type FileDigest } from "../../../../src/sources/guidance.ts";
import { NO_CALLER } from "../../../../src/workspace/access-check.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// skills/list gives each file's SHA-256 and size. They are kept by path and the file's identity on
// disk (adr/0160), so an unchanged file is stat'ed, not read; every change to a file — through
// Atrium, an operator's edit in place that keeps its size and times, a rename over it, a delete —
// must still show in the next listing, and what is kept must stay within its bound.

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
/** A fixed time in the past: what an operator's `touch -d` or `cp -p` leaves a file at. */
const AT = new Date("2026-12-01T10:00:00Z");

let temp: TempRoot;
let platform: string;

beforeEach(async () => {
  temp = await openTempRoot("skill-digests", ALICE);
  platform = await mkdtemp(join(tmpdir(), "atrium-platform-"));
});

afterEach(async () => {
  await temp.remove();
  await rm(platform, { recursive: true, force: true });
});

/**
 * Kept digests over this root's skills. The clock runs a minute ahead, so a file written just now
 * is older than the 2 s a digest must be to be kept (RACY_MS): what is kept then is tested
 * without waiting. A real clock keeps none of them (the last test).
 */
function openListing(digests = new FileDigests(MAX_KEPT_DIGESTS, () => Date.now() + 60_000)) {
  const service = new SkillService(
    temp.layout,
    { orgDir: undefined, maxInstructionsBytes: 32 * 1024 },
    createLogger("silent"),
    platform,
  );
  return { service, digests, guidance: createWorkspaceGuidance(service, digests) };
}

type Listing = ReturnType<typeof openListing>;

/** What skills/list would publish: each skill's files' digests, by `<scope>/<name>`. */
async function listed({ guidance }: Listing): Promise<Record<string, Record<string, FileDigest>>> {
  const packages = await guidance.packages(temp.ws, ALICE);
  return Object.fromEntries(packages.map((pkg) => [pkg.path, pkg.files]));
}

/** The digests of the bytes skills/get serves for each skill, read now: the truth to compare with. */
async function truth(listing: Listing): Promise<Record<string, Record<string, FileDigest>>> {
  const paths = Object.keys(await listed(listing));
  const entries = await Promise.all(
    paths.map(async (path) => {
      const files = (await listing.guidance.packageFiles(temp.ws, ALICE, path))?.files ?? {};
      const digests = Object.entries(files).map(([name, bytes]) => [name, digestOf(bytes)]);
      return [path, Object.fromEntries(digests)] as const;
    }),
  );
  return Object.fromEntries(entries);
}

const scopeDir = () => temp.layout.workspaceSkillsDir(temp.ws);
const guideDir = () => join(scopeDir(), "guide");
const refPath = () => join(guideDir(), "references", "ref.md");

/** The workspace skill `guide` with references/ref.md holding `ref`, its times at AT. */
async function writeGuide(ref: string): Promise<void> {
  await mkdir(join(guideDir(), "references"), { recursive: true });
  await writeFile(
    join(guideDir(), "SKILL.md"),
    "---\nname: guide\ndescription: A guide.\n---\nRead ref.md.\n",
  );
  await writeFile(refPath(), ref);
  await utimes(refPath(), AT, AT);
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Counts the reads of `path` (node:fs/promises' open of it) while `work` runs. */
async function opensOf<T>(path: string, work: () => Promise<T>): Promise<{ result: T; opens: number }> {
  let opens = 0;
  const result = await withFsHook(
    "open",
    (real) =>
      async (...args) => {
        if (args[0] === path) opens += 1;
        return real(...args);
      },
    work,
  );
  return { result, opens };
}

describe("a skill file's kept digest", () => {
  it("is used while the file is the same: an unchanged file is not opened again", async () => {
    await writeGuide("first");
    const listing = openListing();
    const first = await opensOf(refPath(), () => listed(listing));
    expect(first.opens).toBe(1);
    expect(first.result["workspace/guide"]?.["references/ref.md"]).toEqual({
      sha256: sha256("first"),
      size: 5,
    });
    const again = await opensOf(refPath(), () => listed(listing));
    expect(again.opens).toBe(0);
    expect(again.result).toEqual(first.result);
    expect(again.result).toEqual(await truth(listing));
  });

  it("follows an operator's edit in place that keeps the size and sets the times back", async () => {
    await writeGuide("first");
    const listing = openListing();
    await listed(listing);
    // As `cp -p`, `touch -d` or an editor that restores the times: only the change time moves.
    await writeFile(refPath(), "other");
    await utimes(refPath(), AT, AT);
    const after = await listed(listing);
    expect(after["workspace/guide"]?.["references/ref.md"]).toEqual({ sha256: sha256("other"), size: 5 });
    expect(after).toEqual(await truth(listing));
  });

  it("follows an edit within the same second, without setting times", async () => {
    await writeGuide("first");
    const listing = openListing();
    await listed(listing);
    await writeFile(refPath(), "again");
    expect((await listed(listing))["workspace/guide"]?.["references/ref.md"]?.sha256).toBe(sha256("again"));
  });

  it("follows a file renamed over it (another inode) with the same size and times", async () => {
    await writeGuide("first");
    const listing = openListing();
    await listed(listing);
    const temporary = join(guideDir(), ".ref.tmp");
    await writeFile(temporary, "swapd");
    await utimes(temporary, AT, AT);
    await rename(temporary, refPath());
    const after = await listed(listing);
    expect(after["workspace/guide"]?.["references/ref.md"]?.sha256).toBe(sha256("swapd"));
    expect(after).toEqual(await truth(listing));
  });

  it("follows a write through Atrium, which renames a new SKILL.md into place", async () => {
    const writer = new SkillWriter(temp.layout, temp.workspaces, temp.events);
    const target: WriteTarget = {
      scope: "workspace",
      workspaceId: temp.ws,
      principalId: ALICE,
      access: NO_CALLER,
    };
    await writer.create(target, "notes", { description: "Notes.", body: "Version one." });
    const listing = openListing();
    const before = (await listed(listing))["workspace/notes"]?.["SKILL.md"];
    // Same length, so only the bytes tell them apart.
    await writer.update(target, "notes", { intent: "replace_body", body: "Version two." });
    // As the skills app does on the write's skill.changed.
    listing.service.forget(scopeDir());
    const after = await listed(listing);
    expect(after["workspace/notes"]?.["SKILL.md"]).not.toEqual(before);
    expect(after).toEqual(await truth(listing));
    const file = await readFile(join(scopeDir(), "notes", "SKILL.md"), "utf8");
    expect(file).toContain("Version two.");
  });

  it("follows a delete: a bundled file gone is no longer listed, and its skill is listed without it", async () => {
    await writeGuide("first");
    await writeFile(join(guideDir(), "extra.md"), "extra");
    const listing = openListing();
    expect(Object.keys((await listed(listing))["workspace/guide"] ?? {})).toContain("extra.md");
    await rm(join(guideDir(), "extra.md"));
    const after = await listed(listing);
    expect(Object.keys(after["workspace/guide"] ?? {}).sort()).toEqual(["SKILL.md", "references/ref.md"]);
    expect(after).toEqual(await truth(listing));
  });

  it("is true after a restart, whatever changed while the process was down", async () => {
    await writeGuide("first");
    const before = await listed(openListing());
    await writeFile(refPath(), "other");
    await utimes(refPath(), AT, AT);
    // A new process: a new service and nothing kept.
    const restarted = openListing();
    const after = await listed(restarted);
    expect(after["workspace/guide"]?.["references/ref.md"]?.sha256).toBe(sha256("other"));
    expect(after["workspace/guide"]?.["SKILL.md"]).toEqual(before["workspace/guide"]?.["SKILL.md"]);
    expect(after).toEqual(await truth(restarted));
  });
});

describe("the kept digests", () => {
  it("stay within their bound, the oldest used let go first", async () => {
    await writeGuide("first");
    for (const name of ["a.md", "b.md", "c.md"]) await writeFile(join(guideDir(), name), name);
    const listing = openListing(new FileDigests(3, () => Date.now() + 60_000));
    const first = await listed(listing);
    // SKILL.md and four bundled files, three kept.
    expect(Object.keys(first["workspace/guide"] ?? {})).toHaveLength(5);
    expect(listing.digests.size).toBe(3);
    expect(await listed(listing)).toEqual(first);
    expect(listing.digests.size).toBe(3);
    expect(await listed(listing)).toEqual(await truth(listing));
  });

  it("keep nothing of a file changed within 2 s of its read: an edit in the same clock tick would not show", async () => {
    await writeGuide("first");
    const listing = openListing(new FileDigests());
    const first = await opensOf(refPath(), () => listed(listing));
    expect(listing.digests.size).toBe(0);
    const again = await opensOf(refPath(), () => listed(listing));
    expect([first.opens, again.opens]).toEqual([1, 1]);
  });
});
