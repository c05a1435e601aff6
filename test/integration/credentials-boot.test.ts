import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BootError } from "../../src/errors.ts";
import type { PlatformApp } from "../../src/platform/app.ts";
import { AppTools } from "../../src/platform/app-tools.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { CredentialStore } from "../../src/storage/credential-store.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import { startTestAtrium } from "../helpers/atrium.ts";

// The server builds the one credential store after taking the root and before any app, refuses a
// root whose sealed values it has no key for, and hands the store to every app in its context.

const KEY = randomBytes(32);
const RECORD = "cn_0123456789abcdef";
const SECRET = "sk-live-boot-test";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "atrium-credentials-boot-"));
  await mkdir(join(dir, "data"));
  await writeFile(join(dir, "credential-key"), KEY.toString("base64"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const KEYS_SECTION = { credentials: { keys: [{ version: 1, key: { file: "credential-key" } }] } };

/** An app that keeps the store its context gave it, as the connections app will. */
function keeperApp(kept: { store?: CredentialStore }): PlatformApp {
  return {
    name: "keeper",
    start({ credentials }) {
      kept.store = credentials;
      return { tools: new AppTools("keeper") };
    },
  };
}

describe("the credential store at boot", () => {
  it("an app's context holds the store, sealing under the configured key", async () => {
    const kept: { store?: CredentialStore } = {};
    const atrium = await startTestAtrium({
      dir,
      sections: KEYS_SECTION,
      apps: [...PLATFORM_APPS, keeperApp(kept)],
    });
    try {
      const id = await (kept.store as CredentialStore).put(RECORD, "auth.value", SECRET);
      const reopened = await CredentialStore.open(new StorageLayout(atrium.root), {
        keys: new Map([[1, KEY]]),
        newest: 1,
      });
      expect(await reopened.open(id, RECORD, "auth.value")).toBe(SECRET);
    } finally {
      await atrium.close();
    }
  });

  it("a root holding sealed values does not start without credentials.keys, and is released", async () => {
    const seeded = await CredentialStore.open(new StorageLayout(join(dir, "data")), {
      keys: new Map([[1, KEY]]),
      newest: 1,
    });
    await seeded.put(RECORD, "auth.value", SECRET);
    const error = await startTestAtrium({ dir }).then(
      async (atrium) => {
        await atrium.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BootError);
    expect((error as Error).message).toContain("credentials.keys");
    // The lock was released on the way out: the same root starts once the key is named.
    const atrium = await startTestAtrium({ dir, sections: KEYS_SECTION });
    await atrium.close();
  });

  it("a key put under a version it did not seal stops the start, naming the version, and is released", async () => {
    const seeded = await CredentialStore.open(new StorageLayout(join(dir, "data")), {
      keys: new Map([[1, KEY]]),
      newest: 1,
    });
    await seeded.put(RECORD, "auth.value", SECRET);
    // A new key written where version 1's was kept: step 1 of a rotation, misread.
    await writeFile(join(dir, "credential-key"), randomBytes(32).toString("base64"));
    const error = await startTestAtrium({ dir, sections: KEYS_SECTION }).then(
      async (atrium) => {
        await atrium.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BootError);
    expect((error as Error).message).toContain("The key credentials.keys lists as version 1 opens none");
    // The right key back, the same root starts.
    await writeFile(join(dir, "credential-key"), KEY.toString("base64"));
    const atrium = await startTestAtrium({ dir, sections: KEYS_SECTION });
    await atrium.close();
  });
});
