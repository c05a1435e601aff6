import { constants } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapWorkspace, capturingLogger, startTestAtrium, type TestAtrium } from "../helpers/atrium.ts";
import { withFsHook } from "../helpers/fs-hook.ts";
import { journalDuring } from "../helpers/fs-journal.ts";

// A skill's save commits by replacing SKILL.md, then records the version in `.history/`. When that
// record failed (a full disk), the save was answered 500 "changed nothing" though every agent
// already read the new text, and a create's retry was 409. The save is done once SKILL.md is in
// place: it is answered as done, the missing version logged, and recorded by recovery's R6 at the
// next start (history ends with the current SKILL.md).

const logged = capturingLogger("warn");
let t: TestAtrium;
let ws: string;
beforeAll(async () => {
  t = await startTestAtrium({ log: logged.log });
  ws = await bootstrapWorkspace(t, "alice");
});
afterAll(async () => {
  await t?.stop();
});

const full = () => Object.assign(new Error("ENOSPC: no space left on device, open"), { code: "ENOSPC" });

/** Whether `open`'s flags write: a full disk refuses those, never a read. */
const writes = (flags: unknown) =>
  typeof flags === "string"
    ? /[wax+]/.test(flags)
    : typeof flags === "number" &&
      (flags & (constants.O_WRONLY | constants.O_RDWR | constants.O_CREAT)) !== 0;

/** `work` with every file opened for writing under a skill's `.history/` refused as a full disk refuses it. */
const historyFull = <T>(work: () => Promise<T>) =>
  withFsHook(
    "open",
    (real) =>
      (path, flags, ...rest) =>
        String(path).includes("/.history/") && writes(flags)
          ? Promise.reject(full())
          : real(path, flags, ...rest),
    work,
  );

const skills = () => `/v1/workspaces/${ws}/skills`;

describe("a skill save whose version cannot be recorded", () => {
  it("a create is answered 201 and the skill is there", async () => {
    const created = await historyFull(() =>
      t.rest("alice", "POST", skills(), {
        name: "on-call",
        description: "The rota.",
        body: "Page the primary.",
      }),
    );
    expect(created.status, await created.clone().text()).toBe(201);
    expect((await t.rest("alice", "GET", `${skills()}/on-call`)).status).toBe(200);
  });

  it("an edit is answered 200, read back, and its version recorded at the next start", async () => {
    const created = await t.rest("alice", "POST", skills(), {
      name: "release-notes",
      description: "How we write release notes.",
      body: "Version one.",
    });
    expect(created.status).toBe(201);
    const edited = await historyFull(() =>
      t.rest("alice", "PATCH", `${skills()}/release-notes`, { intent: "replace_body", body: "Version two." }),
    );
    expect(edited.status, await edited.clone().text()).toBe(200);
    const read = await t.rest("alice", "GET", `${skills()}/release-notes`);
    expect(((await read.json()) as { body: string }).body).toContain("Version two.");
    expect(logged.lines).toContainEqual(
      expect.objectContaining({
        name: "release-notes",
        msg: expect.stringContaining("version not recorded"),
      }),
    );
    t = await t.restart();
    const history = await t.rest("alice", "GET", `${skills()}/release-notes/history`);
    expect(((await history.json()) as { versions: unknown[] }).versions).toHaveLength(2);
  });

  it("a create whose version was not recorded has a history of none, not a 404", async () => {
    const created = await historyFull(() =>
      t.rest("alice", "POST", skills(), {
        name: "rota",
        description: "The rota.",
        body: "Page the primary.",
      }),
    );
    expect(created.status).toBe(201);
    const history = await t.rest("alice", "GET", `${skills()}/rota/history`);
    expect(history.status, await history.clone().text()).toBe(200);
    expect(((await history.json()) as { versions: unknown[] }).versions).toEqual([]);
  });

  it("a text saved unrecorded is recorded by the skill's next save, before the text that replaces it", async () => {
    await t.rest("alice", "POST", skills(), {
      name: "notes",
      description: "How we write notes.",
      body: "One.",
    });
    const unrecorded = await historyFull(() =>
      t.rest("alice", "PATCH", `${skills()}/notes`, { intent: "replace_body", body: "Two." }),
    );
    expect(unrecorded.status).toBe(200);
    const recorded = await t.rest("alice", "PATCH", `${skills()}/notes`, {
      intent: "replace_body",
      body: "Three.",
    });
    expect(recorded.status).toBe(200);
    const history = await t.rest("alice", "GET", `${skills()}/notes/history`);
    const { versions } = (await history.json()) as { versions: { version: number }[] };
    expect(versions).toHaveLength(3);
    const texts = [];
    for (const { version } of versions) {
      const shown = await t.rest("alice", "GET", `${skills()}/notes/history/${version}`);
      texts.push(await shown.text());
    }
    expect(texts.map((text) => /(One|Two|Three)\./.exec(text)?.[1])).toEqual(
      expect.arrayContaining(["One", "Two", "Three"]),
    );
  });

  it("an edit whose SKILL.md lands and whose folder flush then fails is answered as done (ADR 0166)", async () => {
    await t.rest("alice", "POST", skills(), { name: "flushy", description: "d", body: "Before." });
    const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
    let status = 0;
    await journalDuring(
      async () => {
        status = (
          await t.rest("alice", "PATCH", `${skills()}/flushy`, { intent: "replace_body", body: "After." })
        ).status;
      },
      { sync: (path) => (path.endsWith("/skills/flushy") ? eio() : undefined) },
    );
    expect(status).toBe(200);
    const read = await t.rest("alice", "GET", `${skills()}/flushy`);
    expect(((await read.json()) as { body: string }).body).toContain("After.");
  });
});
