import type { Source } from "./source.ts";
import { isSourceName } from "./tool-names.ts";

/** The sources of one workspace, by source name. Only this registry is consulted for a call. */
export class SourceRegistry {
  private readonly sources = new Map<string, Source>();

  constructor(readonly workspaceId: string) {}

  add(source: Source): void {
    // A name that breaks the grammar could not be split back out of `<source>__<tool>`.
    if (!isSourceName(source.name)) throw new Error(`"${source.name}" is not a valid source name.`);
    if (this.sources.has(source.name)) throw new Error(`Source "${source.name}" is already registered.`);
    this.sources.set(source.name, source);
  }

  /** Puts `source` in place of the one with its name, if any, and closes that one. */
  async replace(source: Source): Promise<void> {
    const previous = this.sources.get(source.name);
    this.sources.delete(source.name);
    this.add(source);
    await previous?.close();
  }

  /** Takes the named source out and closes it; calls already under way finish on their own. */
  async remove(name: string): Promise<void> {
    const source = this.sources.get(name);
    this.sources.delete(name);
    await source?.close();
  }

  get(name: string): Source | undefined {
    return this.sources.get(name);
  }

  all(): Source[] {
    return [...this.sources.values()];
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.all().map((source) => source.close()));
    this.sources.clear();
  }
}
