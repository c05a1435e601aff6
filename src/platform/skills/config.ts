import { resolve } from "node:path";
import type { ConfigSection } from "../../instance/schema.ts";

export const MAX_INSTRUCTIONS_BYTES_DEFAULT = 32 * 1024;
/** Below this the preamble and the truncation note alone would not fit. */
export const MIN_INSTRUCTIONS_BYTES = 1024;

export interface SkillSettings {
  /** The operator's org-scope skills folder, absolute; none when instance.json names none. */
  orgDir: string | undefined;
  /** The most bytes of `initialize` instructions one caller is given. */
  maxInstructionsBytes: number;
}

/** instance.json's `skills` section. */
export const skillsConfig: ConfigSection<SkillSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: {
      orgDir: {
        type: "string",
        minLength: 1,
        description: "Folder of org-scope skills, relative to this file.",
      },
      maxInstructionsBytes: { type: "integer", minimum: MIN_INSTRUCTIONS_BYTES },
    },
  },
  resolve(section, { baseDir }) {
    const file = (section ?? {}) as { orgDir?: string; maxInstructionsBytes?: number };
    return {
      orgDir: file.orgDir === undefined ? undefined : resolve(baseDir, file.orgDir),
      maxInstructionsBytes: file.maxInstructionsBytes ?? MAX_INSTRUCTIONS_BYTES_DEFAULT,
    };
  },
};
