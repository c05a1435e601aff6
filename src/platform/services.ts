import type { FileStore } from "./files/store.ts";
import type { SkillService } from "./skills/service.ts";

/** The stores platform apps share; built once per instance. */
export interface PlatformServices {
  files: FileStore;
  skills: SkillService;
}
