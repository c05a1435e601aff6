import { createHash } from "node:crypto";
import type { Tool } from "@modelcontextprotocol/client";
import type { RemoteSkill } from "../../sources/mcp-source.ts";
import {
  fitsToolName,
  isPersonalSourceName,
  joinToolName,
  MAX_TOOL_NAME_CHARS,
  PERSONAL_SOURCE_PREFIX,
} from "../../sources/tool-names.ts";
import { hidesText } from "../../text.ts";

/** An immutable photograph of what a server offered, taken when it was added or refreshed. */
export interface Snapshot {
  version: number;
  takenAt: string;
  /** The connection's authorizationGeneration when it was taken. */
  generation: number;
  protocolVersion: string;
  serverInfo?: { name: string; version: string };
  /** The server's `instructions`, served to members as a server-scope skill. */
  instructions?: string;
  /** The skills the server publishes through the Skills Extension, pinned like its tools. */
  skills?: RemoteSkill[];
  tools: Tool[];
  /** Per tool name, the digest a call is checked against. */
  digests: Record<string, string>;
  /** Over every tool's digest, in name order: one value to compare two snapshots by. */
  digest: string;
}

/** A remote tool's own name; served, `<connection>__<name>` is held to the same (tool-names.ts). */
const MAX_TOOL_NAME = MAX_TOOL_NAME_CHARS;
const TOOL_NAME = /^[A-Za-z0-9_.-]+$/;
const MAX_DESCRIPTION_CHARS = 8192;
const MAX_TOOLS = 1000;
const MAX_INSTRUCTIONS_CHARS = 32 * 1024;
/**
 * The most JSON one tool may list as (name, description, schemas, annotations, `_meta`, all of
 * it), measured as the snapshot stores it: compact (store.ts).
 */
const MAX_TOOL_JSON_CHARS = 64 * 1024;
/**
 * How deep one field of a tool (a schema, its annotations, its `_meta`) may nest objects and
 * arrays. A real schema nests a few levels per level of its arguments; past this, depth buys a
 * server nothing but the cost of every recursive reader (a digest, a schema compiler, a view).
 */
const MAX_FIELD_DEPTH = 64;
const MAX_SERVER_INFO_CHARS = 256;
/**
 * The most bytes a whole snapshot may take as stored (compact JSON, snapshot-files.ts) unless
 * `connections.maxSnapshotBytes` says otherwise. The bounds above hold each tool and the count,
 * which still left 1,000 × 64 KiB per version, held for each of a member's 50 personal
 * connections (adr/0091, amended). 4 MiB still takes 500 tools of 8 KiB each.
 */
export const DEFAULT_MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024;

/** JSON with object keys sorted at every depth and no spaces: equal values, equal bytes. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function sha256(text: string): string {
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}

/** What a call trusts about a tool: its name, description, schemas and annotations. */
export function toolDigest(tool: Tool): string {
  const { name, description, inputSchema, outputSchema, annotations } = tool;
  return sha256(canonicalJson({ name, description, inputSchema, outputSchema, annotations }));
}

/**
 * Whether a field of `tool` nests deeper than a photograph takes: such a tool has no digest a
 * snapshot could hold, and digesting it (canonicalJson recurses) could overflow the stack.
 */
export function nestsTooDeep(tool: Tool): boolean {
  return Object.values(tool).some((value) => nestsDeeperThan(value, MAX_FIELD_DEPTH));
}

/** Why a tool may not be photographed, or `undefined` when it may. */
export function screenTool(tool: Tool): string | undefined {
  const name = String(tool.name);
  if (name.length === 0 || name.length > MAX_TOOL_NAME || !TOOL_NAME.test(name)) {
    return `tool name ${JSON.stringify(name.slice(0, 80))} is not 1 to ${MAX_TOOL_NAME} letters, digits, "_", "-" or "."`;
  }
  for (const [field, text] of [
    ["description", tool.description],
    ["title", tool.title],
    ["annotations.title", tool.annotations?.title],
  ] as const) {
    if (text === undefined) continue;
    if (text.length > MAX_DESCRIPTION_CHARS)
      return `tool "${name}": its ${field} is over ${MAX_DESCRIPTION_CHARS} characters`;
    if (hidesText(text))
      return `tool "${name}": its ${field} holds invisible (zero-width, bidirectional, variation or tag) or control characters`;
  }
  // Before the size, which JSON.stringify measures by recursing as deep as the tool goes.
  for (const [field, value] of Object.entries(tool)) {
    if (nestsDeeperThan(value, MAX_FIELD_DEPTH))
      return `tool "${name}": its ${shownField(field)} nests objects and arrays more than ${MAX_FIELD_DEPTH} levels deep`;
  }
  const size = JSON.stringify(tool).length;
  if (size > MAX_TOOL_JSON_CHARS)
    return `tool "${name}" lists as ${size} characters of JSON; at most ${MAX_TOOL_JSON_CHARS} are taken`;
  for (const [field, schema] of [
    ["input schema", tool.inputSchema],
    ["output schema", tool.outputSchema],
  ] as const) {
    const problem = schemaTextProblem(schema);
    if (problem) return `tool "${name}": its ${field} ${problem}`;
  }
  return undefined;
}

/**
 * Why `tool`, whose own name is screened, may not be served by `connection`: joined, its name
 * would be over the 128 characters MCP allows. Told with the longest connection name that would
 * take it, since the admin chose the connection's and the server the tool's.
 */
function screenServedName(connection: string, tool: Tool): string | undefined {
  if (fitsToolName(connection, tool.name)) return undefined;
  const served = joinToolName(connection, tool.name).length;
  // A personal connection's owner gives the name without the `my_` Atrium adds (personal-name.ts).
  const added = isPersonalSourceName(connection) ? PERSONAL_SOURCE_PREFIX.length : 0;
  const room = MAX_TOOL_NAME_CHARS - (served - connection.length) - added;
  const helps =
    room > 0
      ? `a connection name of at most ${room} characters would take it (remove the connection and add it under a shorter name)`
      : "no connection name is short enough: the server must give the tool a shorter name";
  return `tool "${tool.name.slice(0, 80)}" would be served as "${joinToolName(connection, "…")}", ${served} characters, over the ${MAX_TOOL_NAME_CHARS} MCP allows; ${helps}`;
}

/**
 * What is wrong with the text in a schema, which a model reads as much as the description:
 * every property name and every string (a description, title, enum, default, example, pattern)
 * is held to a description's limits. Walked without recursion: nesting is the server's choice.
 */
function schemaTextProblem(schema: unknown): string | undefined {
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      if (value.length > MAX_DESCRIPTION_CHARS)
        return `holds a string over ${MAX_DESCRIPTION_CHARS} characters`;
      if (hidesText(value))
        return "holds invisible (zero-width, bidirectional, variation or tag) or control characters";
    } else if (Array.isArray(value)) for (const item of value) pending.push(item);
    else if (value !== null && typeof value === "object")
      for (const [key, inner] of Object.entries(value)) pending.push(key, inner);
  }
  return undefined;
}

/** Whether `value` has objects or arrays nested more than `max` deep; walked without recursion. */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, above] = pending.pop() as [unknown, number];
    if (current === null || typeof current !== "object") continue;
    if (above === max) return true;
    for (const inner of Object.values(current)) pending.push([inner, above + 1]);
  }
  return false;
}

const FIELD_NAMES = new Map([
  ["inputSchema", "input schema"],
  ["outputSchema", "output schema"],
]);

/** A tool's field as a refusal names it: the server chose any name past the known ones. */
function shownField(field: string): string {
  return (
    FIELD_NAMES.get(field) ?? (/^[A-Za-z_]{1,40}$/.test(field) ? field : JSON.stringify(field.slice(0, 40)))
  );
}

/** Why what a server says it is (name, version) may not be pinned, or `undefined` when it may. */
function screenServerInfo(info: { name: string; version: string }): string | undefined {
  for (const [field, text] of [
    ["name", info.name],
    ["version", info.version],
  ] as const) {
    if (text.length > MAX_SERVER_INFO_CHARS)
      return `its serverInfo ${field} is over ${MAX_SERVER_INFO_CHARS} characters`;
    if (hidesText(text)) return `its serverInfo ${field} holds invisible or control characters`;
  }
  return undefined;
}

/** Why a published skill may not be pinned, or `undefined` when it may. */
function screenSkill(skill: RemoteSkill): string | undefined {
  if (!/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}$/.test(skill.name)) {
    return `skill ${JSON.stringify(skill.name.slice(0, 80))} does not have an Agent Skills name`;
  }
  for (const [field, text, max] of [
    ["description", skill.description, 1024],
    ["body", skill.body, MAX_INSTRUCTIONS_CHARS],
  ] as const) {
    if (text.length > max) return `skill "${skill.name}": its ${field} is over ${max} characters`;
    if (hidesText(text)) {
      return `skill "${skill.name}": its ${field} holds invisible or control characters`;
    }
  }
  return undefined;
}

/**
 * Screens every tool, each as `connection` would serve it, and builds the snapshot; refuses the
 * whole listing on any problem, and a snapshot that would take more than `maxSnapshotBytes` as
 * stored.
 */
export function photograph(
  tools: Tool[],
  taken: Omit<Snapshot, "tools" | "digests" | "digest">,
  maxSnapshotBytes: number,
  connection: string,
): { snapshot: Snapshot } | { problems: string[] } {
  const problems = tools.flatMap((tool) => screenTool(tool) ?? screenServedName(connection, tool) ?? []);
  const serverInfo = taken.serverInfo && screenServerInfo(taken.serverInfo);
  if (serverInfo) problems.push(serverInfo);
  const instructions = taken.instructions;
  if (instructions !== undefined) {
    if (instructions.length > MAX_INSTRUCTIONS_CHARS)
      problems.push(`its instructions are over ${MAX_INSTRUCTIONS_CHARS} characters`);
    else if (hidesText(instructions)) {
      problems.push(
        "its instructions hold invisible (zero-width, bidirectional, variation or tag) or control characters",
      );
    }
  }
  for (const skill of taken.skills ?? []) {
    const problem = screenSkill(skill);
    if (problem) problems.push(problem);
  }
  if (tools.length > MAX_TOOLS)
    problems.push(`the server lists ${tools.length} tools; at most ${MAX_TOOLS} are taken`);
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name)) problems.push(`tool "${tool.name}" is listed twice`);
    names.add(tool.name);
  }
  if (problems.length > 0) return { problems };
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : 1));
  const digests = Object.fromEntries(sorted.map((tool) => [tool.name, toolDigest(tool)]));
  const snapshot = { ...taken, tools: sorted, digests, digest: sha256(canonicalJson(digests)) };
  // Measured only once each tool is within its bounds: the JSON is then at most their sum.
  const bytes = Buffer.byteLength(JSON.stringify(snapshot));
  if (bytes > maxSnapshotBytes) {
    return {
      problems: [
        `its snapshot (${tools.length} tools, with their schemas, the instructions and skills) would be ${bytes.toLocaleString("en-US")} bytes of JSON; at most ${maxSnapshotBytes.toLocaleString("en-US")} are taken (connections.maxSnapshotBytes): list fewer or smaller tools, or ask the operator to raise the bound`,
      ],
    };
  }
  return { snapshot };
}

/**
 * Whether two snapshots pin the same: every field but the version, when it was taken and the
 * authorization generation it was taken under. A refresh that finds the server as it was keeps
 * the current snapshot (adr/0091), so a new field of `Snapshot` counts here unless left out by name.
 */
export function pinsSame(a: Snapshot, b: Snapshot): boolean {
  const pinned = ({ version: _version, takenAt: _takenAt, generation: _generation, ...rest }: Snapshot) =>
    canonicalJson(rest);
  return pinned(a) === pinned(b);
}

/**
 * What changed between two snapshots, tool by tool. A server names its tools, and `constructor`,
 * `toString` or `__proto__` is a tool name like any other: only the digests' own keys count, never
 * what an object inherits (test/unit/platform/connections/snapshot.test.ts "diffSnapshots").
 */
export function diffSnapshots(
  from: Snapshot,
  to: Snapshot,
): { added: string[]; removed: string[]; changed: string[] } {
  const before = new Map(Object.entries(from.digests));
  const after = new Map(Object.entries(to.digests));
  return {
    added: [...after.keys()].filter((name) => !before.has(name)),
    removed: [...before.keys()].filter((name) => !after.has(name)),
    changed: [...after]
      .filter(([name, digest]) => before.has(name) && before.get(name) !== digest)
      .map(([name]) => name),
  };
}
