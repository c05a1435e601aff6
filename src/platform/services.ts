import type { FileStore } from "./files/store.ts";

/** The stores platform apps share; built once per instance. */
export interface PlatformServices {
  files: FileStore;
}
