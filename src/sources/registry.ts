import type { McpSource } from "./mcp-source.ts";

/** The sources of one workspace, by source name. Only this registry is consulted for a call. */
export class SourceRegistry {
  private readonly sources = new Map<string, McpSource>();

  constructor(readonly workspaceId: string) {}

  add(source: McpSource): void {
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
