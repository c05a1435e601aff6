import { createHash } from "node:crypto";

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
   * Every skill this caller sees, each of its files (SKILL.md first) with its SHA-256 and size:
   * what `skills/list` publishes. A file is read only when it is not the file it was (adr/0160).
   */
  packages(workspaceId: string, principalId: string): Promise<SkillPackage[]>;
  /**
   * The skill at `path` (`<scope>/<name>`) this caller sees, with the bytes of each of its files:
   * what `skills/get` checks and a SKILL.md read serves. Reads that one skill's files only.
   */
  packageFiles(
    workspaceId: string,
    principalId: string,
    path: string,
  ): Promise<SkillPackage<Uint8Array> | undefined>;
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

/**
 * One skill as the Skills Extension publishes it: `skill://<path>/SKILL.md` and its files, each
 * as its digest (skills/list) or its bytes (skills/get, a read).
 */
export interface SkillPackage<File = FileDigest> {
  /** `<scope>/<name>`: every URI of this skill is `skill://` and this path, encoded (skill-uri.ts). */
  path: string;
  name: string;
  description: string;
  files: Record<string, File>;
}

/** A file's SHA-256, in lowercase hex, and its size in bytes: what a Skills Extension entry lists. */
export interface FileDigest {
  sha256: string;
  size: number;
}

/** The digest of bytes in memory. */
export function digestOf(bytes: Uint8Array): FileDigest {
  return { sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.byteLength };
}

/**
 * The guidance of several providers as one: instructions joined by a blank line, tool notes applied
 * in turn, resources and packages listed together, a resource or a skill's files read from the
 * first provider that has it. With no provider, a workspace has no guidance at all.
 */
export function composeGuidance(providers: readonly Partial<WorkspaceGuidance>[]): WorkspaceGuidance {
  const all = <K extends keyof WorkspaceGuidance>(key: K) =>
    providers.flatMap((p) => (p[key] ? [p[key].bind(p) as WorkspaceGuidance[K]] : []));
  const instructions = all("instructions");
  const annotators = all("annotateTools");
  const listers = all("listResources");
  const readers = all("readResource");
  const packagers = all("packages");
  const fileReaders = all("packageFiles");
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
    async packages(ws, who) {
      return (await Promise.all(packagers.map((f) => f(ws, who)))).flat();
    },
    async packageFiles(ws, who, path) {
      for (const read of fileReaders) {
        const found = await read(ws, who, path);
        if (found) return found;
      }
      return undefined;
    },
  };
}
