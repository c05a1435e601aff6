import { describe, expect, it } from "vitest";
import type { Task } from "../../../../src/platform/tasks/model.ts";
import { outcomeOf } from "../../../../src/platform/tasks/outcome.ts";

const task = {
  outputSchema: { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } },
} as unknown as Task;

describe("a run's outcome", () => {
  it("an isError result is a failed execution, never assessed", () => {
    expect(outcomeOf(task, { content: [{ type: "text", text: "no such file" }], isError: true })).toEqual({
      execution: "failed",
      error: { code: "tool_error", message: "no such file" },
    });
  });

  it("assesses structuredContent, else one JSON text block, against the output schema", () => {
    expect(outcomeOf(task, { content: [], structuredContent: { ok: true } }).assessment).toEqual({
      status: "accepted",
    });
    expect(outcomeOf(task, { content: [{ type: "text", text: '{"ok": true}' }] }).assessment).toEqual({
      status: "accepted",
    });
    expect(outcomeOf(task, { content: [{ type: "text", text: '{"ok": "yes"}' }] })).toEqual({
      execution: "succeeded",
      assessment: { status: "rejected", errors: ["/ok must be boolean"] },
    });
  });

  it("rejects a result with no structured output to check, and leaves a task without a schema unassessed", () => {
    const prose = { content: [{ type: "text" as const, text: "all fine" }] };
    expect(outcomeOf(task, prose)).toMatchObject({
      execution: "succeeded",
      assessment: { status: "rejected" },
    });
    expect(outcomeOf({} as Task, prose)).toEqual({
      execution: "succeeded",
      assessment: { status: "not_assessed" },
    });
  });
});
