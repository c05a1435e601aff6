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

  it("rejects an output too costly to check against the output schema's patterns: the call still succeeded", () => {
    const costly = {
      outputSchema: { type: "object", properties: { s: { type: "string", pattern: "[ab]*a[ab]{990}[cd]" } } },
    } as unknown as Task;
    const outcome = outcomeOf(costly, { content: [], structuredContent: { s: "ab".repeat(100_000) } });
    expect(outcome.execution).toBe("succeeded");
    expect(outcome.assessment?.status).toBe("rejected");
    const why = outcome.assessment?.status === "rejected" ? outcome.assessment.errors?.[0] : undefined;
    expect(why).toMatch(
      /^The output is too costly to check against the outputSchema: .*on a string of 200,000 characters/,
    );
  });
});
