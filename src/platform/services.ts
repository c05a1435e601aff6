import type { FileStore } from "./files/store.ts";
import type { SkillService } from "./skills/service.ts";
import type { SkillWriter } from "./skills/writer.ts";

/** The stores platform apps share; built once per instance. */
export interface PlatformServices {
  files: FileStore;
  skills: SkillService;
  skillWriter: SkillWriter;
}
