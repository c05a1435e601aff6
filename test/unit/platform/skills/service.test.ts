import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log.ts";
import { SKILL_LISTING_IDLE_MS } from "../../../../src/platform/skills/scope-cache.ts";
import { SkillService } from "../../../../src/platform/skills/service.ts";
import { FakeTime } from "../../../helpers/fake-time.ts";
import { openTempRoot, type TempRoot } from "../../../helpers/temp-root.ts";

const ALICE = "usr_aaaaaaaaaaaaaaaaaaaaaaaa";

let temp: TempRoot;
let platform: string;

beforeEach(async () => {
  temp = await openTempRoot("skill-service", ALICE);
  platform = await mkdtemp(join(tmpdir(), "atrium-platform-skills-"));
});

afterEach(async () => {
  await temp.remove();
  await rm(platform, { recursive: true, force: true });
});

/** How many callers' resolutions the service keeps: what it holds is not seen through its API. */
const keptResolutions = (service: SkillService) =>
  (service as unknown as { resolutions: Map<string, unknown> }).resolutions.size;

describe("SkillService", () => {
  it("lets a caller's kept resolution go with a listing it was built from (adr/0098)", async () => {
    const scope = temp.layout.workspaceSkillsDir(temp.ws);
    await mkdir(join(scope, "guide"), { recursive: true });
    await writeFile(
      join(scope, "guide", "SKILL.md"),
      "---\nname: guide\ndescription: A guide.\n---\nRead it.\n",
    );
    // Old enough that the listing is trusted, and kept, from its first read (scope-cache.ts RACY_MS).
    const old = new Date(Date.now() - 60_000);
    for (const path of [platform, scope, join(scope, "guide"), join(scope, "guide", "SKILL.md")])
      await utimes(path, old, old);
    const service = new SkillService(
      temp.layout,
      { orgDir: undefined, maxInstructionsBytes: 32 * 1024 },
      createLogger("silent"),
      platform,
    );

    const first = await service.resolve(temp.ws, ALICE);
    expect(await service.resolve(temp.ws, ALICE)).toBe(first);
    expect(keptResolutions(service)).toBe(1);
    // A write through Atrium lets the workspace's listing go; the resolution built on it goes too,
    // though this caller may never come back to the workspace.
    service.forget(scope);
    expect(keptResolutions(service)).toBe(0);
    expect((await service.resolve(temp.ws, ALICE)).skills.map((s) => s.name)).toEqual(["guide"]);
    expect(keptResolutions(service)).toBe(1);
  });

  it("lets an idle caller's resolution go with the listings it was built from, on the instance's timers", async () => {
    const time = new FakeTime();
    const service = new SkillService(
      temp.layout,
      { orgDir: undefined, maxInstructionsBytes: 32 * 1024 },
      createLogger("silent"),
      platform,
      time,
    );
    await service.resolve(temp.ws, ALICE);
    expect(keptResolutions(service)).toBe(1);
    await time.advance(SKILL_LISTING_IDLE_MS * 2);
    expect(keptResolutions(service)).toBe(0);
    expect(time.armed()).toBe(0);
  });
});
