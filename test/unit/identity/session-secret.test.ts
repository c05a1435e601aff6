import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../../src/errors.ts";
import { sessionSecret } from "../../../src/identity/session-secret.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";
import { journalDuring } from "../../helpers/fs-journal.ts";

let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-session-secret-"));
  layout = new StorageLayout(root);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("sessionSecret", () => {
  it("is the configured secret when there is one, and writes nothing", async () => {
    const secret = "configured-secret-of-at-least-32-bytes";
    expect(await sessionSecret({ secret, maxAgeSeconds: 60 }, layout)).toBe(secret);
    expect(await readdir(root)).toEqual([]);
  });

  it("under dev, is generated once (48 random bytes), kept mode 0600, and reused on the next boot", async () => {
    const first = await sessionSecret({ secret: undefined, maxAgeSeconds: 60 }, layout);
    expect(first).toMatch(/^[A-Za-z0-9_-]{64}$/);
    const path = layout.instanceSecretFile("session-secret");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await readFile(path, "utf8")).trim()).toBe(first);
    expect(await sessionSecret({ secret: undefined, maxAgeSeconds: 60 }, layout)).toBe(first);
    // No temp file is left beside it.
    expect(await readdir(layout.instanceDir())).toEqual(["session-secret"]);
  });

  it("flushes the _instance/ folder it makes in the root before the generated secret is used", async () => {
    const journal = await journalDuring(() =>
      sessionSecret({ secret: undefined, maxAgeSeconds: 60 }, layout),
    );
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    expect(made).toEqual([layout.instanceDir()]);
    expect(journal.unflushedFolders()).toEqual([]);
  });

  it("refuses a kept secret too short to sign with, naming the file", async () => {
    await mkdir(layout.instanceDir(), { recursive: true });
    await writeFile(layout.instanceSecretFile("session-secret"), "short\n");
    const attempt = sessionSecret({ secret: undefined, maxAgeSeconds: 60 }, layout);
    await expect(attempt).rejects.toThrow(BootError);
    await expect(attempt).rejects.toThrow(/session-secret/);
  });
});

describe("sessionSecret racing on a fresh root", () => {
  it("racing: two boots at once agree on one generated secret, and only it is kept", async () => {
    const config = { secret: undefined, maxAgeSeconds: 60 };
    const results = await Promise.all(
      Array.from({ length: 4 }, () => sessionSecret(config, new StorageLayout(root))),
    );
    expect(new Set(results).size).toBe(1);
    const kept = (await readFile(layout.instanceSecretFile("session-secret"), "utf8")).trim();
    expect(results[0]).toBe(kept);
    expect(await readdir(layout.instanceDir())).toEqual(["session-secret"]);
  });
});
