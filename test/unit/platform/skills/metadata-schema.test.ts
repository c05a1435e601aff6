import { describe, expect, it } from "vitest";
import { validateAtriumMetadata } from "../../../../src/platform/skills/metadata-schema.ts";
import { parseSkill, SkillInvalid } from "../../../../src/platform/skills/parse.ts";

describe("the metadata.atrium check (adr/0157)", () => {
  it("stops at the first failure and keeps only it", () => {
    const wrong = { tools: Array.from({ length: 64 }, (_, i) => `Not A Tool ${i}`) };
    expect(validateAtriumMetadata(wrong)).toBe(false);
    expect(validateAtriumMetadata.errors).toHaveLength(1);
    expect(validateAtriumMetadata.errors?.[0]?.instancePath).toBe("/tools/0");
  });

  it("names that first failure in a SKILL.md's refusal", () => {
    const text = `---\nname: a\ndescription: d\nmetadata:\n  atrium:\n    tools: [nope, also-nope]\n---\nbody\n`;
    const refused = (() => {
      try {
        parseSkill(text, "workspace");
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(SkillInvalid);
    expect((refused as SkillInvalid).field).toBe("metadata.atrium.tools.0");
  });
});
