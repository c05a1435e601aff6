import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { SkillService } from "../../../../src/platform/skills/service.ts";
import { withFsHook } from "../../../helpers/fs-hook.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

// A failure to read an `always` skill's body that is not "changed since it was listed" (EMFILE
// under a connection flood, EIO) moves no stamp. Called "did not fit" and kept with the caller's
// resolution, it left the skill out of that caller's initialize and server/discover, marked
// truncated, until the folder changed (adr/0051, amended 2026-12-07).

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";
let temp: TempRoot;
let platform: string;

beforeEach(async () => {
  temp = await openTempRoot("instructions-read-failure", ALICE);
  platform = await mkdtemp(join(tmpdir(), "atrium-platform-skills-"));
});
afterEach(async () => {
  await temp.remove();
  await rm(platform, { recursive: true, force: true });
});

it("instructions whose always skill could not be read fail, and the next request carries the skill", async () => {
  const scope = temp.layout.workspaceSkillsDir(temp.ws);
  const file = join(scope, "house-rules", "SKILL.md");
  await mkdir(join(scope, "house-rules"), { recursive: true });
  await writeFile(
    file,
    "---\nname: house-rules\ndescription: The rules.\nmetadata:\n  atrium:\n    loading: always\n---\nNever delete production data.\n",
  );
  // Old enough that the listing is trusted, and kept, from its first read (scope-cache.ts RACY_MS).
  const old = new Date(Date.now() - 60_000);
  for (const path of [platform, scope, join(scope, "house-rules"), file]) await utimes(path, old, old);
  const service = new SkillService(
    temp.layout,
    { orgDir: undefined, maxInstructionsBytes: 32 * 1024 },
    createLogger("silent"),
    platform,
  );
  // The listing is read (and kept) first, as tools/list would.
  expect((await service.resolve(temp.ws, ALICE)).skills.map((s) => s.name)).toEqual(["house-rules"]);

  let failed = false;
  const first = withFsHook(
    "open",
    (real) =>
      (async (...args: Parameters<typeof real>) => {
        if (!failed && String(args[0]) === file) {
          failed = true;
          throw Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });
        }
        return real(...args);
      }) as typeof real,
    () => service.instructions(temp.ws, ALICE),
  );
  // Not "did not fit": the request fails (the front door answers -32603 with its request id).
  await expect(first).rejects.toMatchObject({ code: "EMFILE" });
  expect(failed).toBe(true);

  // Nothing changed on disk; the descriptor shortage is over: the next request carries the skill.
  const next = await service.instructions(temp.ws, ALICE);
  expect(next).toContain("Never delete production data.");
  expect(next).not.toContain("truncated");
});
