import { describe, expect, it } from "vitest";
import { TASK_DEFAULTS } from "../../../../src/platform/tasks/config.ts";
import { defineTask, redefineTask } from "../../../../src/platform/tasks/definition.ts";

const definer = { workspaceId: "ws_0123456789abcdef", principalId: "usr_0123456789abcdef01234567" };
const ids = { id: "tsk_0123456789abcdef01234567", now: "2026-01-01T00:00:00.000Z" };
const action = { tool: "files__list", arguments: {} };

describe("a task's definition", () => {
  it("fills the defaults and counts a trigger's schedule from when it was set", () => {
    const task = defineTask(
      { name: "t", action, trigger: { everySeconds: 60 } },
      definer,
      TASK_DEFAULTS,
      ids,
    );
    expect(task).toMatchObject({
      ownerId: definer.principalId,
      visibility: "private",
      limits: { timeoutSeconds: TASK_DEFAULTS.defaultTimeoutSeconds, maxConcurrentRuns: 1 },
      lastScheduledAt: ids.now,
    });
    expect(task.scopes).toBeUndefined();
  });

  it("changes only what is given; null removes a trigger or a schema; a new trigger counts from now", () => {
    const task = defineTask(
      { name: "t", action, trigger: { everySeconds: 60 }, outputSchema: { type: "object" } },
      { ...definer, scopes: ["mcp:read", "mcp:write"] },
      TASK_DEFAULTS,
      ids,
    );
    expect(task.scopes).toEqual(["mcp:read", "mcp:write"]);
    const later = "2026-01-02T00:00:00.000Z";
    const renamed = redefineTask(task, { name: "u" }, definer, TASK_DEFAULTS, later);
    expect(renamed).toMatchObject({ name: "u", trigger: { everySeconds: 60 }, lastScheduledAt: ids.now });
    const retimed = redefineTask(
      task,
      { trigger: { cron: "0 9 * * *", timezone: "UTC" } },
      definer,
      TASK_DEFAULTS,
      later,
    );
    expect(retimed.lastScheduledAt).toBe(later);
    const bare = redefineTask(task, { trigger: null, outputSchema: null }, definer, TASK_DEFAULTS, later);
    expect(bare.trigger).toBeUndefined();
    expect(bare.outputSchema).toBeUndefined();
    expect(bare.lastScheduledAt).toBeUndefined();
  });

  it("keeps its scopes through any edit but its owner's new action, which stamps the owner's", () => {
    const task = defineTask({ name: "t", action }, { ...definer, scopes: ["mcp:write"] }, TASK_DEFAULTS, ids);
    const later = "2026-01-02T00:00:00.000Z";
    const admin = { workspaceId: definer.workspaceId, principalId: "usr_aaaaaaaaaaaaaaaaaaaaaaaa" };
    // An admin's edit with a session (no scopes), or with a token of their own, changes neither.
    for (const editor of [admin, { ...admin, scopes: ["mcp:read", "mcp:write"] }]) {
      const edited = redefineTask(
        task,
        { name: "u", trigger: { everySeconds: 3600 } },
        editor,
        TASK_DEFAULTS,
        later,
      );
      expect(edited.scopes).toEqual(["mcp:write"]);
    }
    expect(redefineTask(task, { visibility: "shared" }, definer, TASK_DEFAULTS, later).scopes).toEqual([
      "mcp:write",
    ]);
    const reacted = redefineTask(
      task,
      { action: { tool: "files__info", arguments: {} } },
      { ...definer, scopes: ["mcp:read"] },
      TASK_DEFAULTS,
      later,
    );
    expect(reacted.scopes).toEqual(["mcp:read"]);
    expect(redefineTask(task, { action }, definer, TASK_DEFAULTS, later).scopes).toBeUndefined();
  });

  it("refuses what a task may not be, naming the field", () => {
    const refusals: [Record<string, unknown>, string][] = [
      [{ name: "t", action: { tool: "tasks__run" } }, "cannot call a tasks tool"],
      [{ name: "t", action, limits: { maxConcurrentRuns: 99 } }, "limits.maxConcurrentRuns"],
      [{ name: "t", action, limits: { timeoutSeconds: 1.5 } }, "limits.timeoutSeconds"],
      [{ name: "t", action, trigger: { everySeconds: 60, cron: "* * * * *" } }, '"trigger" is'],
      [{ name: "t", action, trigger: { cron: "* * * * * *", timezone: "UTC" } }, "tasks.minIntervalSeconds"],
      [{ name: "t", action, trigger: { cron: "0 0 30 2 *", timezone: "UTC" } }, "never fires"],
      [{ name: "t\nu", action }, '"name"'],
      [{ name: "t", action, visibility: "public" }, '"visibility"'],
      [{ name: "t", action, inputSchema: [] }, '"inputSchema"'],
    ];
    for (const [body, words] of refusals) {
      expect(() => defineTask(body, definer, TASK_DEFAULTS, ids), JSON.stringify(body)).toThrow(words);
    }
  });

  it("refuses a schema pattern RE2 cannot match when the task is defined, naming the pattern", () => {
    const lookahead = { type: "object", properties: { a: { type: "string", pattern: "^(?!x)" } } };
    expect(() =>
      defineTask({ name: "t", action, inputSchema: lookahead }, definer, TASK_DEFAULTS, ids),
    ).toThrow(
      '"inputSchema" is not a JSON Schema Atrium can use: the pattern "^(?!x)" cannot be matched in linear time',
    );
    const backreference = { type: "object", patternProperties: { "^(a)\\1$": { type: "string" } } };
    expect(() =>
      defineTask({ name: "t", action, outputSchema: backreference }, definer, TASK_DEFAULTS, ids),
    ).toThrow('"outputSchema" is not a JSON Schema Atrium can use: the pattern "^(a)\\1$"');
  });

  it("refuses a schema that applies itself to the same value without end, saying where", () => {
    for (const field of ["inputSchema", "outputSchema"]) {
      expect(() =>
        defineTask({ name: "t", action, [field]: { $ref: "#" } }, definer, TASK_DEFAULTS, ids),
      ).toThrow(`"${field}" applies the schema at "#" to the same value again`);
    }
    const recursive = { type: "object", properties: { child: { $ref: "#" } } };
    expect(
      defineTask({ name: "t", action, inputSchema: recursive }, definer, TASK_DEFAULTS, ids).inputSchema,
    ).toBe(recursive);
  });

  it("refuses a definition over 64 KB before compiling its schemas", () => {
    // A schema ajv would refuse, padded past the bound: the size is what is answered, so nothing
    // was compiled first (a schema's compile costs time and memory with its size).
    const inputSchema = { type: "not a type", description: "x".repeat(70_000) };
    const tooLarge = "A task's definition is at most 65536 bytes as JSON.";
    expect(() => defineTask({ name: "t", action, inputSchema }, definer, TASK_DEFAULTS, ids)).toThrow(
      tooLarge,
    );
    const task = defineTask({ name: "t", action }, definer, TASK_DEFAULTS, ids);
    expect(() => redefineTask(task, { outputSchema: inputSchema }, definer, TASK_DEFAULTS, ids.now)).toThrow(
      tooLarge,
    );
  });
});
