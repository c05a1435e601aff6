/**
 * What a workspace tells each caller besides its tools: instructions, notes on tools, readable
 * resources and skill packages. The MCP front door and the REST tool list ask this interface;
 * platform apps provide it (the skills app does today), and the kit composes what they provide.
 */
export interface WorkspaceGuidance {
  instructions(workspaceId: string, principalId: string): Promise<string>;
  annotateTools<T extends DescribedTool>(workspaceId: string, principalId: string, tools: T[]): Promise<T[]>;
  listResources(workspaceId: string, principalId: string): Promise<GuidanceResource[]>;
  readResource(workspaceId: string, principalId: string, uri: string): Promise<ResourceContents | undefined>;
  /**
   * The skills this caller sees, with the bytes of each of their files (SKILL.md first): every one,
   * or only the one at `path` (`<scope>/<name>`), so a single lookup reads a single skill's files.
   */
  packages(workspaceId: string, principalId: string, path?: string): Promise<SkillPackage[]>;
}

export interface DescribedTool {
  name: string;
  description?: string;
}

export interface GuidanceResource {
  uri: string;
  name: string;
  description?: string;
  mimeType?: string;
}

export type ResourceContents =
  | { uri: string; mimeType?: string; text: string }
  | { uri: string; mimeType?: string; blob: string };

/** One skill as the Skills Extension publishes it: `skill://<path>/SKILL.md` and its files. */
export interface SkillPackage {
  /** `<scope>/<name>`: every URI of this skill is `skill://` and this path, encoded (skill-uri.ts). */
  path: string;
  name: string;
  description: string;
  files: Record<string, Uint8Array>;
}

/**
 * The guidance of several providers as one: instructions joined by a blank line, tool notes applied
 * in turn, resources and packages listed together, a resource read from the first provider that
 * has it. With no provider, a workspace has no guidance at all.
 */
export function composeGuidance(providers: readonly Partial<WorkspaceGuidance>[]): WorkspaceGuidance {
  const all = <K extends keyof WorkspaceGuidance>(key: K) =>
    providers.flatMap((p) => (p[key] ? [p[key].bind(p) as WorkspaceGuidance[K]] : []));
  const instructions = all("instructions");
  const annotators = all("annotateTools");
  const listers = all("listResources");
  const readers = all("readResource");
  const packagers = all("packages");
  return {
    async instructions(ws, who) {
      const parts = await Promise.all(instructions.map((f) => f(ws, who)));
      return parts.filter((part) => part.length > 0).join("\n\n");
    },
    async annotateTools(ws, who, tools) {
      let annotated = tools;
      for (const annotate of annotators) annotated = await annotate(ws, who, annotated);
      return annotated;
    },
    async listResources(ws, who) {
      return (await Promise.all(listers.map((f) => f(ws, who)))).flat();
    },
    async readResource(ws, who, uri) {
      for (const read of readers) {
        const found = await read(ws, who, uri);
        if (found) return found;
      }
      return undefined;
    },
    async packages(ws, who, path) {
      return (await Promise.all(packagers.map((f) => f(ws, who, path)))).flat();
    },
  };
}
