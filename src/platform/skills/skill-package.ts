import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { digestOf, type FileDigest, type SkillPackage } from "../../sources/guidance.ts";
import { type PinnedFolder, pinFolder } from "../../storage/no-follow.ts";
import type { FileDigests } from "./file-digests.ts";
import type { Skill, SkillScope } from "./model.ts";
import { bodyIn, bodyOf, openSkillText, readSkillText } from "./skill-body.ts";
import { openSkillFile, SKILL_FILE, SkillFileRefused, scopeFolderAllows } from "./skill-file.ts";

// A skill as the Skills Extension publishes it. Its SKILL.md is rendered from the name,
// description and body — the frontmatter its entry states — rather than served as the file on
// disk, whose `metadata.atrium` block (ADR 0012) is not the standard's string map: a verifying
// client (the SDK's SkillsClient) compares the file's frontmatter with the entry and refused
// Atrium's own skills before. The digest still changes exactly when the name, description or
// body does; bundled files are served as they are on disk. A skill one of whose files is not
// served is left out whole: a package without a file it ships would be a different skill. It
// costs only itself. So is one whose SKILL.md changed since it was listed (removed, renamed, no
// longer parsing): the next request lists the folder again.

/** The most a bundled file may hold to be served: skills/get and a read take one whole. */
export const MAX_BUNDLED_FILE_BYTES = 8 * 1024 * 1024;

/** `skill` with the bytes of each of its files, SKILL.md rendered: what skills/get checks and a read serves. */
export async function packageFiles(skill: Skill): Promise<SkillPackage<Uint8Array> | undefined> {
  const body = await bodyOf(skill).catch(() => undefined);
  if (body === undefined) return undefined;
  const rendered = { [SKILL_FILE]: renderSkillFile(skill, body) };
  if (skill.dir === undefined) return { ...known(skill), files: rendered };
  const { dir, scope } = skill;
  const names = skill.files ?? [];
  const contents = await Promise.all(names.map((name) => bundledBytes(dir, scope, name)));
  if (contents.some((content) => typeof content === "string")) return undefined;
  return {
    ...known(skill),
    files: {
      ...rendered,
      ...Object.fromEntries(names.map((name, i) => [name, new Uint8Array(contents[i] as Buffer)])),
    },
  };
}

/**
 * `skill` with the SHA-256 and size of each of its files, SKILL.md rendered: what skills/list
 * publishes. A file `digests` knows as it is now costs one lstat (file-digests.ts); any other is
 * opened as packageFiles opens it, never through a link, read a chunk at a time and hashed.
 */
export async function packageDigests(skill: Skill, digests: FileDigests): Promise<SkillPackage | undefined> {
  if (skill.dir === undefined) {
    // A connection's published skill: no file, its body held (adr/0098).
    const body = await bodyOf(skill).catch(() => undefined);
    return body === undefined
      ? undefined
      : { ...known(skill), files: { [SKILL_FILE]: digestOf(renderSkillFile(skill, body)) } };
  }
  const { dir, scope } = skill;
  const salt = renderingOf(skill);
  const skillFile = join(dir, SKILL_FILE);
  const names = skill.files ?? [];
  // A Map, not an object: a bundled file may be named `__proto__`.
  const files = new Map<string, FileDigest | undefined>([
    [SKILL_FILE, digests.known(skillFile, salt)],
    ...names.map((name): [string, FileDigest | undefined] => [name, digests.known(join(dir, name))]),
  ]);
  const unknown = [...files.keys()].filter((name) => files.get(name) === undefined);
  if (unknown.length > 0) {
    let within: PinnedFolder;
    try {
      within = await pinFolder(dirname(dir), scopeFolderAllows(scope));
    } catch {
      return undefined;
    }
    const made = await Promise.all(
      unknown.map((name) =>
        name === SKILL_FILE
          ? renderedDigest(skill, salt, digests).catch(() => undefined)
          : bundledDigest(join(dir, name), within, digests),
      ),
    );
    for (const [i, name] of unknown.entries()) files.set(name, made[i]);
  }
  if ([...files.values()].some((digest) => digest === undefined)) return undefined;
  return { ...known(skill), files: Object.fromEntries(files) as Record<string, FileDigest> };
}

function known(skill: Skill) {
  return { path: `${skill.scope}/${skill.name}`, name: skill.name, description: skill.description };
}

/**
 * What a rendered SKILL.md takes besides its body: its name and description (the listing's, which
 * may be older than the file) and the scope it is parsed in.
 */
function renderingOf({ scope, name, description }: Skill): string {
  return createHash("sha256")
    .update(JSON.stringify([scope, name, description]))
    .digest("base64");
}

/** The digest of `skill`'s SKILL.md as rendered, its body read and checked as bodyOf reads it. */
async function renderedDigest(skill: Skill, salt: string, digests: FileDigests): Promise<FileDigest> {
  const opened = await openSkillText(skill);
  try {
    return await digests.of(join(skill.dir ?? "", SKILL_FILE), opened.handle, salt, async () =>
      digestOf(renderSkillFile(skill, bodyIn(skill, await readSkillText(skill, opened)))),
    );
  } finally {
    await opened.handle.close();
  }
}

/** A bundled file's digest, opened as bundledBytes opens it; undefined when it is not served. */
async function bundledDigest(
  path: string,
  within: PinnedFolder,
  digests: FileDigests,
): Promise<FileDigest | undefined> {
  const opened = await openSkillFile(path, within).catch((error: unknown) => {
    if (error instanceof SkillFileRefused) return undefined;
    throw error;
  });
  if (opened === undefined) return undefined;
  try {
    if (opened.info.size > MAX_BUNDLED_FILE_BYTES) return undefined;
    return await digests.of(path, opened.handle);
  } finally {
    await opened.handle.close();
  }
}

/**
 * A bundled file's bytes, or why it is not served: not a regular file (a FIFO would block a
 * thread of the pool for good; a symlink, swapped in after the listing skipped it, could point
 * anywhere the process can read: adr/0139), or over MAX_BUNDLED_FILE_BYTES (a gigabyte file,
 * read on every list, held its memory and failed the whole list). It is opened as a SKILL.md
 * is (openSkillFile), never blocking or following a link, nor through a folder swapped for one
 * since the listing (its `references/`, the skill's own), nor the scope's folder itself where
 * it may not be a link (a workspace's or a person's `skills/`: scopeFolderAllows). An operator
 * puts such files in place; no member can write one.
 */
export async function bundledBytes(
  folder: string,
  scope: SkillScope,
  file: string,
): Promise<Buffer | string> {
  const allow = scopeFolderAllows(scope);
  const opened = await openSkillFile(join(folder, file), dirname(folder), allow).catch((error: unknown) => {
    if (error instanceof SkillFileRefused) return `it ${error.reason}`;
    throw error;
  });
  if (opened === undefined) return "it is gone";
  if (typeof opened === "string") return opened;
  try {
    const { size } = opened.info;
    if (size > MAX_BUNDLED_FILE_BYTES)
      return `it holds ${size} bytes, over the ${MAX_BUNDLED_FILE_BYTES} a bundled file may`;
    return await opened.handle.readFile();
  } finally {
    await opened.handle.close();
  }
}

function renderSkillFile(skill: Skill, body: string): Uint8Array {
  const frontmatter = `name: ${JSON.stringify(skill.name)}\ndescription: ${JSON.stringify(skill.description)}`;
  return new TextEncoder().encode(`---\n${frontmatter}\n---\n\n${body}`);
}
