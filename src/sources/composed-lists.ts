import type { Tool } from "@modelcontextprotocol/client";
import type { Tool as FrontTool } from "@modelcontextprotocol/server";
import type { SourceRegistry } from "./registry.ts";
import type { Source } from "./source.ts";
import { joinToolName } from "./tool-names.ts";

interface Composed {
  sources: readonly Source[];
  /** Each source's own list as it answered (undefined: it failed), compared by identity. */
  lists: readonly (Tool[] | undefined)[];
  tools: FrontTool[];
}

/**
 * Each caller's composed tool list per workspace registry, kept while it is still true (adr/0051).
 * A source keeps its own list until its server says it changed (mcp-source.ts), and a registry
 * swaps a source object when a connection is added, refreshed or removed, so "the same sources,
 * each answering the same list object" is exactly "nothing changed". Listing is caller-aware
 * (personal sources), so the list is kept per caller; a registry that is evicted takes its lists
 * with it. A failed source's list is never kept: the next request asks it again.
 */
export class ComposedLists {
  private readonly byRegistry = new WeakMap<SourceRegistry, Map<string, Composed>>();

  of(
    registry: SourceRegistry,
    principalId: string,
    sources: readonly Source[],
    lists: readonly (Tool[] | undefined)[],
    compose: () => FrontTool[],
  ): FrontTool[] {
    let callers = this.byRegistry.get(registry);
    const kept = callers?.get(principalId);
    if (kept && sameItems(kept.sources, sources) && sameItems(kept.lists, lists)) return kept.tools;
    const tools = compose();
    if (lists.includes(undefined)) return tools;
    if (!callers) {
      callers = new Map();
      this.byRegistry.set(registry, callers);
    }
    callers.set(principalId, { sources, lists, tools });
    return tools;
  }
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

/**
 * A source's own list with each tool named `<source>__<tool>`, kept per list object: a platform
 * app's one source answers the same list in every workspace (adr/0057), so its namespaced tools
 * are built once for the instance instead of once per workspace and caller.
 */
export class NamespacedLists {
  private readonly byList = new WeakMap<Tool[], { source: string; tools: FrontTool[] }>();

  of(source: string, list: Tool[] | undefined): FrontTool[] {
    if (!list) return [];
    const kept = this.byList.get(list);
    if (kept?.source === source) return kept.tools;
    // The client and server types differ only in how they type an input property's schema.
    const tools = list.map((tool) => ({ ...tool, name: joinToolName(source, tool.name) }) as FrontTool);
    this.byList.set(list, { source, tools });
    return tools;
  }
}
