import { utimesSync, writeFileSync } from "node:fs";
import { lutimes, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScopeCache, SKILL_LISTING_IDLE_MS } from "../../../../src/platform/skills/scope-cache.ts";
import { SkillFileCache } from "../../../../src/platform/skills/skill-dirs.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";

// File times are set explicitly, a second apart per edit, so a change never hides in one clock
// tick of the file system; `now` is the cache's clock for its racy-read rule.
const T0 = 1_700_000_000_000;
let dir: string;
let edits: number;
let now: number;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-scope-cache-"));
  edits = 0;
  now = T0 + 1_000_000;
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = (name: string, body = `Body of ${name}.`) =>
  `---\nname: ${name}\ndescription: About ${name}.\n---\n${body}\n`;

/** An operator's edit on disk: what changed gets the next distinct time, as a later edit would. */
async function touched(...paths: string[]): Promise<void> {
  edits += 1;
  const at = new Date(T0 + edits * 1_000);
  for (const path of [dir, ...paths]) await utimes(path, at, at);
}

/** A symlink at `path`, its own times (a stamp's, as the link is never followed) long past. */
async function linked(target: string, path: string): Promise<void> {
  await symlink(target, path);
  await lutimes(path, new Date(T0), new Date(T0));
}

async function putSkill(name: string, body?: string): Promise<void> {
  await mkdir(join(dir, name), { recursive: true });
  await writeFile(join(dir, name, "SKILL.md"), text(name, body));
  await touched(join(dir, name), join(dir, name, "SKILL.md"));
}

const LINKED = "SKILL.md is a symlink, which Atrium does not follow: put the file itself in its place";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const newCache = () => new ScopeCache(undefined, () => now);
const names = async (cache: ScopeCache) => (await cache.read(dir, "workspace")).skills.map((s) => s.name);

describe("ScopeCache", () => {
  it("answers a second read from memory when nothing on disk changed", async () => {
    await putSkill("alpha");
    const cache = newCache();
    const first = await cache.read(dir, "workspace");
    expect(first.skills.map((s) => s.name)).toEqual(["alpha"]);
    expect(await cache.read(dir, "workspace")).toBe(first);
  });

  it("shows a skill an operator adds on disk, and drops one they remove", async () => {
    await putSkill("alpha");
    const cache = newCache();
    expect(await names(cache)).toEqual(["alpha"]);
    await putSkill("beta");
    expect((await names(cache)).sort()).toEqual(["alpha", "beta"]);
    await rm(join(dir, "alpha"), { recursive: true });
    await touched();
    expect(await names(cache)).toEqual(["beta"]);
  });

  it("shows an operator's edit of a SKILL.md in place", async () => {
    await putSkill("alpha", "First words.");
    const cache = newCache();
    expect((await cache.read(dir, "workspace")).skills[0]?.bodyBytes).toBe(12);
    await writeFile(join(dir, "alpha", "SKILL.md"), text("alpha", "Second words, longer."));
    await touched(join(dir, "alpha", "SKILL.md"));
    expect((await cache.read(dir, "workspace")).skills[0]?.bodyBytes).toBe(21);
  });

  it("shows a SKILL.md that is fixed after it was reported as a problem", async () => {
    await mkdir(join(dir, "alpha"));
    await writeFile(join(dir, "alpha", "SKILL.md"), "not a skill");
    await touched(join(dir, "alpha"), join(dir, "alpha", "SKILL.md"));
    const cache = newCache();
    const broken = await cache.read(dir, "workspace");
    expect(broken.skills).toEqual([]);
    expect(broken.problems.map((p) => p.name)).toEqual(["alpha"]);
    await writeFile(join(dir, "alpha", "SKILL.md"), text("alpha"));
    await touched(join(dir, "alpha", "SKILL.md"));
    const fixed = await cache.read(dir, "workspace");
    expect(fixed.skills.map((s) => s.name)).toEqual(["alpha"]);
    expect(fixed.problems).toEqual([]);
  });

  it("shows bundled files added and removed in a nested folder", async () => {
    await putSkill("alpha");
    await mkdir(join(dir, "alpha", "examples"));
    await touched(join(dir, "alpha"), join(dir, "alpha", "examples"));
    const cache = newCache();
    expect((await cache.read(dir, "workspace")).skills[0]?.files).toEqual([]);
    await writeFile(join(dir, "alpha", "examples", "one.txt"), "1");
    await touched(join(dir, "alpha", "examples"));
    expect((await cache.read(dir, "workspace")).skills[0]?.files).toEqual(["examples/one.txt"]);
    await rm(join(dir, "alpha", "examples", "one.txt"));
    await touched(join(dir, "alpha", "examples"));
    expect((await cache.read(dir, "workspace")).skills[0]?.files).toEqual([]);
  });

  it("lists nothing for a scope folder that does not exist, and its skills once it does", async () => {
    const missing = join(dir, "later");
    const cache = newCache();
    expect((await cache.read(missing, "user")).skills).toEqual([]);
    await mkdir(join(missing, "alpha"), { recursive: true });
    await writeFile(join(missing, "alpha", "SKILL.md"), text("alpha"));
    await touched(missing, join(missing, "alpha"), join(missing, "alpha", "SKILL.md"));
    expect((await cache.read(missing, "user")).skills.map((s) => s.name)).toEqual(["alpha"]);
  });

  it("reads a folder again after it is forgotten, though no time on disk moved (a write through Atrium)", async () => {
    await putSkill("alpha");
    const other = join(dir, "..", `${dir.split("/").at(-1)}-other`);
    await mkdir(other, { recursive: true });
    // Older than the cache's clock, so its listing is trusted (not re-read as possibly racy).
    await utimes(other, new Date(T0), new Date(T0));
    try {
      const cache = newCache();
      const first = await cache.read(dir, "workspace");
      const elsewhere = await cache.read(other, "user");
      cache.forget(dir);
      const second = await cache.read(dir, "workspace");
      expect(second).not.toBe(first);
      expect(second).toEqual(first);
      // Another folder's listing is kept: one write does not make every scope be read again.
      expect(await cache.read(other, "user")).toBe(elsewhere);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it("shares one read of a folder among the requests that find it unread at once", async () => {
    await putSkill("alpha");
    const cache = newCache();
    const [first, second] = await Promise.all([cache.read(dir, "workspace"), cache.read(dir, "workspace")]);
    expect(second).toBe(first);
    // Once it is done, a forgotten folder is read anew, not joined to the read before the write.
    cache.forget(dir);
    const [third, fourth] = await Promise.all([cache.read(dir, "workspace"), cache.read(dir, "workspace")]);
    expect(third).not.toBe(first);
    expect(fourth).toBe(third);
  });

  it("does not trust a read made within two seconds of a change, until the change is older", async () => {
    await putSkill("alpha");
    now = T0 + edits * 1_000 + 500;
    const cache = newCache();
    const racy = await cache.read(dir, "workspace");
    expect(await cache.read(dir, "workspace")).not.toBe(racy);
    now += 5_000;
    const settled = await cache.read(dir, "workspace");
    expect(await cache.read(dir, "workspace")).toBe(settled);
  });

  it("checks once per event-loop turn: reads in the same turn share it, the next turn checks again", async () => {
    await putSkill("alpha", "First words.");
    const cache = newCache();
    await cache.read(dir, "workspace");
    await nextTurn();
    const checked = await cache.read(dir, "workspace");
    // An edit that lands between two reads of one turn (as between requests read together).
    const skillFile = join(dir, "alpha", "SKILL.md");
    writeFileSync(skillFile, text("alpha", "Second words, longer."));
    const at = new Date(T0 + 99_000);
    utimesSync(skillFile, at, at);
    expect(await cache.read(dir, "workspace")).toBe(checked);
    await nextTurn();
    expect((await cache.read(dir, "workspace")).skills[0]?.bodyBytes).toBe(21);
  });

  it("keeps scopes apart: the same folder read as another scope is its own listing", async () => {
    await putSkill("alpha");
    const cache = newCache();
    const asWorkspace = await cache.read(dir, "workspace");
    const asOrg = await cache.read(dir, "org");
    expect(asWorkspace.skills[0]?.scope).toBe("workspace");
    expect(asOrg.skills[0]?.scope).toBe("org");
  });

  it("reports a SKILL.md that is a symlink (a loop) as a problem, keeps the listing while it stays so, and sees it fixed", async () => {
    await putSkill("good");
    await mkdir(join(dir, "looped"));
    await linked("SKILL.md", join(dir, "looped", "SKILL.md"));
    await touched(join(dir, "looped"));
    const cache = newCache();
    const first = await cache.read(dir, "workspace");
    expect(first.skills.map((s) => s.name)).toEqual(["good"]);
    expect(first.problems).toEqual([{ scope: "workspace", name: "looped", message: LINKED }]);
    await nextTurn();
    // Checked again in a new turn: still a link, so still true, and neither thrown nor read again.
    expect(await cache.read(dir, "workspace")).toBe(first);
    await rm(join(dir, "looped", "SKILL.md"));
    await writeFile(join(dir, "looped", "SKILL.md"), text("looped"));
    await touched(join(dir, "looped"), join(dir, "looped", "SKILL.md"));
    await nextTurn();
    const fixed = await cache.read(dir, "workspace");
    expect(fixed.skills.map((s) => s.name).sort()).toEqual(["good", "looped"]);
    expect(fixed.problems).toEqual([]);
  });

  it("reports a SKILL.md linked to a file outside the scope folder, never reading it, however the file changes", async () => {
    // The link can point anywhere the process can read; what it points to is never served.
    const shared = await mkdtemp(join(tmpdir(), "atrium-scope-cache-shared-"));
    try {
      await writeFile(join(shared, "alpha.md"), text("alpha", "OUTSIDE-BODY"));
      await mkdir(join(dir, "alpha"));
      await linked(join(shared, "alpha.md"), join(dir, "alpha", "SKILL.md"));
      await touched(join(dir, "alpha"), join(shared, "alpha.md"));
      const cache = newCache();
      const first = await cache.read(dir, "workspace");
      expect(first).toEqual({
        skills: [],
        problems: [{ scope: "workspace", name: "alpha", message: LINKED }],
      });
      await nextTurn();
      await writeFile(join(shared, "alpha.md"), text("alpha", "OUTSIDE-BODY, EDITED"));
      expect(await cache.read(dir, "workspace")).toBe(first);
    } finally {
      await rm(shared, { recursive: true, force: true });
    }
  });

  it("reports a scope folder that cannot be listed (a symlink loop) as that scope's problem, not a throw", async () => {
    const looped = join(dir, "looped-scope");
    await symlink("looped-scope", looped);
    const cache = newCache();
    const listing = await cache.read(looped, "org");
    expect(listing).toEqual({
      skills: [],
      problems: [{ scope: "org", name: "looped-scope", message: "the skills folder cannot be read (ELOOP)" }],
    });
    await nextTurn();
    expect(await cache.read(looped, "org")).toBe(listing);
  });

  it("a new cache (a restart) lists what is on disk", async () => {
    await putSkill("alpha");
    expect(await names(newCache())).toEqual(["alpha"]);
    await putSkill("beta");
    expect((await names(newCache())).sort()).toEqual(["alpha", "beta"]);
  });

  it("keeps no skill's body: the scope folders one person fills are held by their skills' settings alone", async () => {
    // A person may fill a workspace's folder with 500 skills of 256 KiB, in each of the 1,000
    // workspaces they may make: kept whole, each listing held all of it (adr/0098).
    const body = "x".repeat(250_000);
    const cache = newCache();
    const kept: unknown[] = [];
    for (let w = 0; w < 4; w++) {
      const folder = join(dir, `ws${w}`);
      const paths = [folder];
      for (let i = 0; i < 20; i++) {
        await mkdir(join(folder, `big-${i}`), { recursive: true });
        await writeFile(join(folder, `big-${i}`, "SKILL.md"), text(`big-${i}`, body));
        paths.push(join(folder, `big-${i}`), join(folder, `big-${i}`, "SKILL.md"));
      }
      await touched(...paths);
      const listing = await cache.read(folder, "workspace");
      expect(listing.skills.map((s) => s.bodyBytes)).toEqual(new Array(20).fill(body.length));
      // The kept listing itself: read again, the same object.
      expect(await cache.read(folder, "workspace")).toBe(listing);
      kept.push(listing);
    }
    expect(JSON.stringify(kept).length).toBeLessThan(40_000);
  });

  it("holds at most its byte budget, the oldest used let go first, and says which listings it let go", async () => {
    const fill = async (folder: string) => {
      const paths = [folder];
      for (let i = 0; i < 10; i++) {
        const skill = join(folder, `s-${i}`);
        await mkdir(skill, { recursive: true });
        await writeFile(join(skill, "SKILL.md"), text(`s-${i}`).replace("About", "d".repeat(1000)));
        paths.push(skill, join(skill, "SKILL.md"));
      }
      await touched(...paths);
    };
    const folders = ["a", "b", "c", "d", "e"].map((name) => join(dir, name));
    for (const folder of folders) await fill(folder);
    const dropped: unknown[] = [];
    const probe = new ScopeCache(undefined, () => now);
    await probe.read(folders[0] as string, "workspace");
    const one = probe.heldBytes;
    expect(one).toBeGreaterThan(10 * 2_000);
    // Room for two listings of this size.
    const cache = new ScopeCache(
      undefined,
      () => now,
      (listing) => dropped.push(listing),
      2 * one + one / 2,
    );
    const listings = [];
    for (const folder of folders) {
      listings.push(await cache.read(folder, "workspace"));
      expect(cache.heldBytes).toBeLessThanOrEqual(2 * one + one / 2);
    }
    expect(dropped).toEqual(listings.slice(0, 3));
    expect(listings.map((listing) => cache.keeps(listing))).toEqual([false, false, false, true, true]);
    // A write's forget lets go too.
    cache.forget(folders[4] as string);
    expect(dropped.at(-1)).toBe(listings[4]);
    expect(cache.heldBytes).toBe(one);
  });

  it("lets an idle listing go, with its parsed files, on the instance's timers; a used one stays", async () => {
    await putSkill("alpha");
    const other = join(dir, "alpha");
    const time = new FakeTime();
    // A parse is kept only once its file's change time (the real one: it cannot be set) is old.
    const files = new SkillFileCache(() => Date.now() + 60_000);
    const dropped: unknown[] = [];
    const cache = new ScopeCache(
      files,
      () => now,
      (listing) => dropped.push(listing),
      undefined,
      time,
    );
    const idle = await cache.read(dir, "workspace");
    const used = await cache.read(other, "workspace");
    expect(files.size).toBe(1);
    await time.advance(SKILL_LISTING_IDLE_MS / 2);
    await nextTurn();
    expect(await cache.read(other, "workspace")).toBe(used);
    await time.advance(SKILL_LISTING_IDLE_MS / 2 + 1);
    expect(dropped).toEqual([idle]);
    expect(cache.keeps(idle)).toBe(false);
    expect(cache.keeps(used)).toBe(true);
    expect(files.size).toBe(0);
    // Once nothing is kept, nothing is armed.
    await time.advance(SKILL_LISTING_IDLE_MS);
    expect(dropped).toEqual([idle, used]);
    expect(cache.heldBytes).toBe(0);
    expect(time.armed()).toBe(0);
  });
});
