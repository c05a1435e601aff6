import { describe, expect, it } from "vitest";
import { Conflict } from "../../../../src/errors.ts";
import { composeInstructions } from "../../../../src/platform/skills/instructions.ts";
import type { Skill } from "../../../../src/platform/skills/model.ts";
import { resolveSkills } from "../../../../src/platform/skills/resolve.ts";

const ROOMY_BYTES = 64 * 1024;

function skill(name: string, loading: Skill["loading"], extra: Partial<Skill> = {}): Skill {
  return {
    name,
    description: `what ${name} is for`,
    body: `BODY-OF-${name}`,
    scope: "workspace",
    provenance: "admin",
    loading,
    tools: [],
    ...extra,
  };
}

function catalogLines(instructions: string): string[] {
  const catalog = instructions.split("## Skill catalog\n\n")[1] ?? "";
  return catalog.split("\n").filter((line) => line.startsWith("- "));
}

describe("composeInstructions", () => {
  it("puts always skills' bodies in name order, before the catalog", async () => {
    const skills = resolveSkills([
      skill("zulu", "always"),
      skill("catalogued", "dynamic"),
      skill("alpha", "always"),
      skill("mike", "always"),
    ]);
    const out = await composeInstructions(skills, ROOMY_BYTES);
    const positions = ["alpha", "mike", "zulu"].map((n) => out.indexOf(`## Skill: ${n}\n\nBODY-OF-${n}`));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(out.indexOf("## Skill catalog")).toBeGreaterThan(positions[2] ?? Number.POSITIVE_INFINITY);
  });

  it("lists dynamic skills by name and description only, sorted, without their bodies", async () => {
    const skills = resolveSkills([
      skill("zeta", "dynamic"),
      skill("alpha", "dynamic"),
      skill("pinned", "always"),
    ]);
    const out = await composeInstructions(skills, ROOMY_BYTES);
    expect(catalogLines(out)).toEqual(["- alpha: what alpha is for", "- zeta: what zeta is for"]);
    expect(out).not.toContain("BODY-OF-alpha");
    expect(out).not.toContain("BODY-OF-zeta");
    expect(out).not.toContain("- pinned:");
  });

  it("gives identical bytes for the same skills, however they were gathered", async () => {
    const a = [skill("one", "always"), skill("two", "dynamic"), skill("three", "dynamic")];
    const first = await composeInstructions(resolveSkills(a), ROOMY_BYTES);
    const second = await composeInstructions(
      resolveSkills([...a].reverse().map((s) => ({ ...s }))),
      ROOMY_BYTES,
    );
    expect(Buffer.from(second).equals(Buffer.from(first))).toBe(true);
  });

  it("changes when a skill's description changes", async () => {
    const before = await composeInstructions([skill("one", "dynamic")], ROOMY_BYTES);
    const after = await composeInstructions([skill("one", "dynamic", { description: "new" })], ROOMY_BYTES);
    expect(after).not.toBe(before);
  });

  it("has no catalog section when there is nothing to list", async () => {
    const out = await composeInstructions([skill("only", "always")], ROOMY_BYTES);
    expect(out).toContain("BODY-OF-only");
    expect(out).not.toContain("## Skill catalog");
  });

  it("names what did not fit in maxBytes as truncated", async () => {
    const big = "x".repeat(1200);
    const skills = resolveSkills([
      skill("small", "always"),
      skill("huge", "always", { body: big }),
      skill("listed", "dynamic"),
      skill("wordy", "dynamic", { description: big }),
    ]);
    const maxBytes = 1024;
    const out = await composeInstructions(skills, maxBytes);
    expect(out).toContain("BODY-OF-small");
    expect(out).not.toContain(big);
    expect(catalogLines(out)[0]).toBe("- listed: what listed is for");
    expect(out).toMatch(/truncated: huge, wordy did not fit/);
  });

  it("reads a listed skill's body only when its size fits, so a composition reads at most its bound", async () => {
    const listed = (name: string, bodyBytes: number): Skill => {
      const { body: _held, ...rest } = skill(name, "always");
      return { ...rest, bodyBytes };
    };
    const read: string[] = [];
    const out = await composeInstructions(
      [listed("big-one", 250_000), listed("small", 10), listed("big-two", 250_000)],
      4096,
      async (s) => {
        read.push(s.name);
        return "x".repeat(s.bodyBytes ?? 0);
      },
    );
    expect(read).toEqual(["small"]);
    expect(out).toContain(`## Skill: small\n\n${"x".repeat(10)}`);
    expect(out).toContain("truncated: big-one, big-two");
  });

  it("names a skill whose file changed since its listing as not fitting, never failing the rest", async () => {
    const out = await composeInstructions(
      [skill("gone", "always"), skill("kept", "always")],
      ROOMY_BYTES,
      async (s) => {
        if (s.name === "gone") throw new Conflict("skill_unreadable", "changed since it was listed");
        return s.body ?? "";
      },
    );
    expect(out).toContain("## Skill: kept\n\nBODY-OF-kept");
    expect(out).toContain("truncated: gone");
  });

  it("fails when a body cannot be read for any other reason, rather than call it too big", async () => {
    const emfile = Object.assign(new Error("EMFILE: too many open files"), { code: "EMFILE" });
    const composing = composeInstructions(
      [skill("house-rules", "always"), skill("kept", "always")],
      ROOMY_BYTES,
      async (s) => {
        if (s.name === "house-rules") throw emfile;
        return s.body ?? "";
      },
    );
    await expect(composing).rejects.toBe(emfile);
  });

  it("names nothing as truncated when everything fits", async () => {
    const out = await composeInstructions([skill("a", "always"), skill("b", "dynamic")], ROOMY_BYTES);
    expect(out).not.toContain("truncated");
  });
});

describe("the instructions bound", () => {
  it("never exceeds maxBytes, however many skills do not fit", async () => {
    const { composeInstructions: compose } = await import("../../../../src/platform/skills/instructions.ts");
    const make = (name: string, loading: "always" | "dynamic", size: number) => ({
      name,
      description: `d${"x".repeat(size)}`,
      body: "b".repeat(size),
      scope: "workspace" as const,
      provenance: "admin" as const,
      loading,
      tools: [],
    });
    for (const maxBytes of [1024, 1500, 4096]) {
      for (const count of [1, 5, 40]) {
        const skills = Array.from({ length: count }, (_, i) =>
          make(
            `skill-with-a-long-name-${String(i).padStart(3, "0")}`,
            i % 2 ? "always" : "dynamic",
            37 * (i + 1),
          ),
        );
        const text = await compose(skills, maxBytes);
        expect(Buffer.byteLength(text), `maxBytes ${maxBytes}, ${count} skills`).toBeLessThanOrEqual(
          maxBytes,
        );
        if (Buffer.byteLength(skills.map((s) => s.body).join("")) > maxBytes)
          expect(text).toContain("truncated");
      }
    }
  });
});
