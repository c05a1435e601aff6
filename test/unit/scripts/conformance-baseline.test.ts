import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  BaselineError,
  type Check,
  judgeScenario,
  parseBaseline,
} from "../../../scripts/lib/conformance-baseline.mjs";

const whole = { perCheck: false, file: "b.yml" };
const perCheck = { perCheck: true, file: "b.yml" };

const ok = (id: string): Check => ({ id, status: "SUCCESS" });
const bad = (id: string, status: Check["status"] = "FAILURE"): Check => ({ id, status, errorMessage: "no" });

describe("parseBaseline", () => {
  it("reads each entry's reason from the comment lines above it or on its line", () => {
    const text = [
      "# header, not a reason",
      "client:",
      "  - ignored",
      "server:",
      "  # calls a fixture tool",
      "  # that Atrium lacks",
      "  - tools-call-image",
      "  - prompts-get-simple # fixture prompt",
      "",
    ].join("\n");
    expect([...parseBaseline(text, whole)]).toEqual([
      ["tools-call-image", "calls a fixture tool that Atrium lacks"],
      ["prompts-get-simple", "fixture prompt"],
    ]);
  });

  it("reads the client: list instead when asked, and ignores the server: one", () => {
    const text = "server:\n  # r\n  - s\nclient:\n  # a 2025-03-26 server\n  - auth/backcompat\n";
    expect([...parseBaseline(text, { ...whole, section: "client" })]).toEqual([
      ["auth/backcompat", "a 2025-03-26 server"],
    ]);
    expect([...parseBaseline(text, whole).keys()]).toEqual(["s"]);
  });

  it("refuses an entry with no reason, naming the line", () => {
    const text = "server:\n  # a reason\n  - a\n\n  - b\n";
    expect(() => parseBaseline(text, whole)).toThrow(
      new BaselineError("b.yml:5: b has no reason (write it as a comment above the entry)"),
    );
  });

  it("does not carry a reason across a blank line", () => {
    expect(() => parseBaseline("server:\n  # for a\n\n  - a\n", whole)).toThrow(/a has no reason/);
  });

  it("takes <scenario>:<check-id> only where the suite does", () => {
    const text = "server:\n  # fixture tool\n  - server-stateless:sep-2575-x\n";
    expect(() => parseBaseline(text, whole)).toThrow(/whole scenarios only/);
    expect([...parseBaseline(text, perCheck).keys()]).toEqual(["server-stateless:sep-2575-x"]);
  });

  it("refuses malformed, duplicate and redundant entries", () => {
    expect(() => parseBaseline("server:\n  # r\n  - a:\n", perCheck)).toThrow(/both sides are required/);
    expect(() => parseBaseline("server:\n  # r\n  - a\n  # r\n  - a\n", whole)).toThrow(/listed twice/);
    expect(() => parseBaseline("server:\n  # r\n  - a\n  # r\n  - a:c\n", perCheck)).toThrow(
      /a is baselined whole, so a:c is redundant/,
    );
    expect(() => parseBaseline("server:\n  key: value\n", whole)).toThrow(/not a baseline entry/);
  });

  it("reads the committed baselines, every entry with a reason", () => {
    for (const [file, options, atLeast] of [
      ["tools/conformance/expected-failures.yml", whole, 10],
      ["tools/conformance/expected-failures-2026.yml", perCheck, 10],
      ["tools/conformance/expected-failures-client-auth.yml", { ...whole, section: "client" }, 1],
      ["tools/conformance/expected-failures-client-auth-2026.yml", { ...perCheck, section: "client" }, 0],
    ] as const) {
      const entries = parseBaseline(readFileSync(file, "utf8"), { ...options, file });
      expect(entries.size, file).toBeGreaterThanOrEqual(atLeast);
      for (const reason of entries.values()) expect(reason.length).toBeGreaterThan(20);
    }
  });
});

describe("judgeScenario", () => {
  const baseline = new Map([
    ["listed", "fixture"],
    ["partly:c2", "fixture tool"],
    ["partly:c3", "fixture tool"],
  ]);

  it("passes a scenario whose checks all pass, and fails one with a FAILURE or a WARNING", () => {
    expect(
      judgeScenario({ name: "s", checks: [ok("c1"), { id: "i", status: "INFO" }] }, baseline).verdict,
    ).toBe("pass");
    expect(judgeScenario({ name: "s", checks: [ok("c1"), bad("c2")] }, baseline).verdict).toBe("fail");
    expect(judgeScenario({ name: "s", checks: [bad("c1", "WARNING")] }, baseline).verdict).toBe("fail");
  });

  it("fails a scenario that left no checks", () => {
    const j = judgeScenario({ name: "s" }, baseline);
    expect(j.verdict).toBe("fail");
    expect(j.problems[0]?.errorMessage).toMatch(/did not run to completion/);
  });

  it("expects a listed scenario to fail, and calls it stale when it passes", () => {
    expect(judgeScenario({ name: "listed", checks: [bad("c1")] }, baseline)).toMatchObject({
      verdict: "expected",
      expected: ["listed"],
    });
    expect(judgeScenario({ name: "listed", checks: [ok("c1")] }, baseline)).toMatchObject({
      verdict: "stale",
      stale: ["listed"],
    });
  });

  it("excuses only the listed checks of a scenario", () => {
    expect(
      judgeScenario({ name: "partly", checks: [ok("c1"), bad("c2"), bad("c3", "WARNING")] }, baseline),
    ).toMatchObject({
      verdict: "expected",
      expected: ["partly:c2", "partly:c3"],
    });
    const other = judgeScenario({ name: "partly", checks: [bad("c1"), bad("c2")] }, baseline);
    expect(other.verdict).toBe("fail");
    expect(other.problems.map((p) => p.id)).toEqual(["c1"]);
  });

  it("calls a listed check stale when it passes, and tolerates one that never ran", () => {
    expect(
      judgeScenario({ name: "partly", checks: [ok("c1"), ok("c2"), bad("c3")] }, baseline),
    ).toMatchObject({
      verdict: "stale",
      stale: ["partly:c2"],
    });
    expect(judgeScenario({ name: "partly", checks: [ok("c1"), bad("c2")] }, baseline).verdict).toBe(
      "expected",
    );
  });

  it("judges a repeated check id by its most severe occurrence", () => {
    const checks = [bad("c2"), ok("c2"), ok("c3"), bad("c3", "WARNING")];
    expect(judgeScenario({ name: "partly", checks }, baseline)).toMatchObject({
      verdict: "expected",
      expected: ["partly:c2", "partly:c3"],
    });
  });
});
