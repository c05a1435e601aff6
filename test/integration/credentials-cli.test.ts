import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { resealCredentials } from "../../src/credentials-reseal.ts";
import type { SealKeyRing } from "../../src/crypto/seal.ts";
import { loadInstance } from "../../src/instance/load.ts";
import { acquireInstanceLock } from "../../src/instance/lock.ts";
import { createLogger } from "../../src/log.ts";
import { PLATFORM_APPS } from "../../src/platform/index.ts";
import { configSections } from "../../src/platform/kit.ts";
import { CredentialStore, type StoredCredential } from "../../src/storage/credential-store.ts";
import { StorageLayout } from "../../src/storage/paths.ts";
import { capturedOutput, runAtriumCli, runAtriumMain, writeCliInstance } from "../helpers/cli.ts";
import { ANOTHER_HOLDER, takeOver } from "../helpers/lock-takeover.ts";

// Each run starts node through tsx; on a loaded shared machine that alone can take many seconds.
const BOOT_MS = 60_000;
const SLOW = { timeout: 200_000 };

const KEY_1 = randomBytes(32);
const KEY_2 = randomBytes(32);
const SECRETS = ["sk-live-first-never-printed", "sk-live-second-never-printed"];

async function tempDir(onFinished: TestContext["onTestFinished"]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "atrium-cli-credentials-"));
  onFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** An instance in `dir` whose credentials.keys are the given versions, each key in its own file. */
async function instanceWithKeys(dir: string, versions: number[]): Promise<string> {
  await writeFile(join(dir, "key-1.txt"), `${KEY_1.toString("base64")}\n`);
  await writeFile(join(dir, "key-2.txt"), KEY_2.toString("hex"));
  return writeCliInstance(
    dir,
    versions.length === 0
      ? {}
      : {
          credentials: {
            keys: versions.map((version) => ({ version, key: { file: `key-${version}.txt` } })),
          },
        },
  );
}

function ring(...versions: number[]): SealKeyRing {
  const all = new Map([
    [1, KEY_1],
    [2, KEY_2],
  ]);
  return { keys: new Map(versions.map((v) => [v, all.get(v) as Buffer])), newest: Math.max(...versions) };
}

/** Seals SECRETS under key 1 in `<dir>/data`, as a server configured with only that key would have. */
async function seedUnderKey1(dir: string): Promise<{ layout: StorageLayout; ids: string[] }> {
  const layout = new StorageLayout(join(dir, "data"));
  const store = await CredentialStore.open(layout, ring(1));
  const ids = [
    await store.put("cn_0123456789abcdef", "auth.value", SECRETS[0] as string),
    await store.put("cn_fedcba9876543210", "auth.value", SECRETS[1] as string),
  ];
  return { layout, ids };
}

async function keyVersionOf(layout: StorageLayout, id: string): Promise<number> {
  const stored = JSON.parse(
    await readFile(layout.collectionFile("credentials", id), "utf8"),
  ) as StoredCredential;
  return stored.sealed.kv;
}

function expectNoSecretIn(output: string): void {
  for (const secret of [...SECRETS, KEY_1.toString("base64"), KEY_2.toString("hex")]) {
    expect(output).not.toContain(secret);
  }
}

describe("atrium credentials reseal", SLOW, () => {
  it("re-seals every credential under the newest key, says how many, and is idempotent", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const { layout, ids } = await seedUnderKey1(dir);
    const instance = await instanceWithKeys(dir, [1, 2]);

    const first = await runAtriumCli(["credentials", "reseal", "--instance", instance], dir, BOOT_MS);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("Re-sealed 2 of 2 stored credential(s)");
    expect(first.stdout).toContain("key version 2");
    for (const id of ids) expect(await keyVersionOf(layout, id)).toBe(2);

    const again = await runAtriumCli(["credentials", "reseal", "--instance", instance], dir, BOOT_MS);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("Re-sealed 0 of 2 stored credential(s)");
    expectNoSecretIn(first.stdout + first.stderr + again.stdout + again.stderr);

    // Key 1 can now go: the values open under key 2 alone, and the lock was released.
    const only2 = await CredentialStore.open(layout, ring(2));
    expect(await only2.open(ids[0] as string, "cn_0123456789abcdef", "auth.value")).toBe(SECRETS[0]);
    const lock = await acquireInstanceLock(layout, {
      publicUrl: "http://127.0.0.1:1",
      log: createLogger("silent"),
    });
    await lock.release();
  });

  it("--data points it at another root", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const { layout, ids } = await seedUnderKey1(dir);
    const elsewhere = await tempDir(onTestFinished);
    const instance = await instanceWithKeys(elsewhere, [1, 2]);
    const exit = await runAtriumCli(
      ["credentials", "reseal", "--instance", instance, "--data", join(dir, "data")],
      elsewhere,
      BOOT_MS,
    );
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain("Re-sealed 2 of 2");
    expect(await keyVersionOf(layout, ids[1] as string)).toBe(2);
  });

  it("refuses a --data that is not a root Atrium has run on, naming it, and creates nothing", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    await seedUnderKey1(dir);
    const instance = await instanceWithKeys(dir, [1, 2]);
    for (const typo of [join(dir, "dat"), dir]) {
      const exit = await runAtriumMain(["credentials", "reseal", "--instance", instance, "--data", typo]);
      expect(exit.code).toBe(1);
      expect(exit.stderr).toContain(`${typo} is not a data root Atrium has run on`);
      expect(exit.stdout).toBe("");
    }
    expect(existsSync(join(dir, "dat"))).toBe(false);
    expect(existsSync(join(dir, "_instance"))).toBe(false);
  });

  it("refuses while another process holds the data root, and changes nothing", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    const { layout, ids } = await seedUnderKey1(dir);
    const instance = await instanceWithKeys(dir, [1, 2]);
    // What a running server holds (src/instance/lock.ts); this test process is alive, so it is not stale.
    const lock = await acquireInstanceLock(layout, {
      publicUrl: "http://127.0.0.1:9",
      log: createLogger("silent"),
    });
    onTestFinished(() => lock.release());
    const exit = await runAtriumCli(["credentials", "reseal", "--instance", instance], dir, BOOT_MS);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain("is in use by Atrium process");
    expect(exit.stdout).toBe("");
    for (const id of ids) expect(await keyVersionOf(layout, id)).toBe(1);
  });

  it("stops before the next credential once another process has taken the root over, says what is left, and exits 1", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const { layout, ids } = await seedUnderKey1(dir);
    const store = await CredentialStore.open(layout, ring(1));
    ids.push(await store.put("cn_00112233445566ff", "auth.value", "sk-live-third-never-printed"));
    const config = await loadInstance(await instanceWithKeys(dir, [1, 2]), {
      sections: configSections(PLATFORM_APPS),
    });
    let checks = 0;
    const output = capturedOutput();
    const code = await resealCredentials(
      {
        config,
        // The real lock, taken over by another process once the first credential is re-sealed (as
        // if this one had been frozen past the stale bound): the command reads the lock file itself.
        lockRoot: async (root) => {
          const lock = await acquireInstanceLock(root, {
            publicUrl: "http://127.0.0.1:1",
            log: createLogger("silent"),
            existingRoot: true,
          });
          return {
            release: () => lock.release(),
            async stillHeld() {
              checks += 1;
              if (checks === 2) await takeOver(root.instanceLockFile());
              return lock.stillHeld();
            },
          };
        },
      },
      output,
    );
    // Before, it went on re-sealing beside the process that held the root now, and exited 0.
    expect(code).toBe(1);
    expect(checks).toBe(2);
    const versions = await Promise.all(ids.map((id) => keyVersionOf(layout, id)));
    expect(versions.filter((version) => version === 2)).toHaveLength(1);
    expect(versions.filter((version) => version === 1)).toHaveLength(2);
    expect(output.stdout).toBe("");
    expect(output.stderr).toContain(
      `atrium: the instance lock ${layout.instanceLockFile()} stopped being this process's while it ran`,
    );
    expect(output.stderr).toContain(
      "Re-sealed 1 credential(s); 2 of 3 are still sealed under older key versions, so keep those in credentials.keys.",
    );
    expect(output.stderr).toContain("run atrium credentials reseal again");
    // The new holder's lock is left alone.
    expect(JSON.parse(await readFile(layout.instanceLockFile(), "utf8"))).toEqual(ANOTHER_HOLDER);
    expectNoSecretIn(output.stdout + output.stderr);
  });

  it("a root holding sealed values and no credentials.keys is refused, naming the field", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    await seedUnderKey1(dir);
    const instance = await instanceWithKeys(dir, []);
    const exit = await runAtriumCli(["credentials", "reseal", "--instance", instance], dir, BOOT_MS);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain("credentials.keys");
    expect(exit.stderr).not.toMatch(/\n\s+at /);
    expectNoSecretIn(exit.stdout + exit.stderr);
  });

  it("a key put under a version it did not seal is refused naming the version, and nothing is re-sealed", async ({
    onTestFinished,
  }) => {
    const dir = await tempDir(onTestFinished);
    const { layout, ids } = await seedUnderKey1(dir);
    const instance = await instanceWithKeys(dir, [1, 2]);
    // Key 2's text where version 1's was kept: step 1 of the rotation, misread.
    await writeFile(join(dir, "key-1.txt"), KEY_2.toString("base64"));
    const exit = await runAtriumMain(["credentials", "reseal", "--instance", instance]);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain("The key credentials.keys lists as version 1 opens none of the 2");
    expect(exit.stdout).toBe("");
    expectNoSecretIn(exit.stdout + exit.stderr);
    for (const id of ids) expect(await keyVersionOf(layout, id)).toBe(1);
  });

  it("usage errors exit 2 with the usage on stderr; --help exits 0", async ({ onTestFinished }) => {
    const dir = await tempDir(onTestFinished);
    for (const args of [
      ["credentials"],
      ["credentials", "rotate"],
      ["credentials", "reseal", "--port", "1"],
    ]) {
      // The first goes through the process (its exit code is 2); the rest differ only in parsing,
      // so they run main in this process and skip a cold start of tsx and every source.
      const exit = args.length === 1 ? await runAtriumCli(args, dir, BOOT_MS) : await runAtriumMain(args);
      expect(exit.code, args.join(" ")).toBe(2);
      expect(exit.stdout).toBe("");
      expect(exit.stderr).toContain("atrium credentials reseal [--instance PATH] [--data DIR]");
    }
    const help = await runAtriumMain(["credentials", "reseal", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("credentials reseal");
  });
});
