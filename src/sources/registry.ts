import type { McpSource } from "./mcp-source.ts";
import { isSourceName } from "./tool-names.ts";

/** The sources of one workspace, by source name. Only this registry is consulted for a call. */
export class SourceRegistry {
  private readonly sources = new Map<string, McpSource>();

  constructor(readonly workspaceId: string) {}

  add(source: McpSource): void {
    // A name that breaks the grammar could not be split back out of `<source>__<tool>`.
    if (!isSourceName(source.name)) throw new Error(`"${source.name}" is not a valid source name.`);
    if (this.sources.has(source.name)) throw new Error(`Source "${source.name}" is already registered.`);
    this.sources.set(source.name, source);
  }

  get(name: string): McpSource | undefined {
    return this.sources.get(name);
  }

  all(): McpSource[] {
    return [...this.sources.values()];
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.all().map((source) => source.close()));
    this.sources.clear();
  }
}
