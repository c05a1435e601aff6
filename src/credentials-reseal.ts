import type { CliOutput } from "./cli.ts";
import { type CommandLock, lockLostSentence } from "./instance/lock.ts";
import type { InstanceConfig } from "./instance/schema.ts";
import { CredentialRefused, CredentialStore } from "./storage/credential-store.ts";
import { StorageLayout } from "./storage/paths.ts";

/** What `atrium credentials reseal` was asked, its flags checked. */
export interface CredentialsReseal {
  config: InstanceConfig;
  /** Takes the root's lock as `serve` does (src/instance/lock.ts). */
  lockRoot(layout: StorageLayout): Promise<CommandLock>;
}

/**
 * `atrium credentials reseal`: with the root's lock held like `serve` (so never beside a running
 * server), re-seals every stored credential under the newest key, and says how many. Answers the
 * exit code: 1 when a credential does not open, or when the lock stopped being this process's
 * part way (ADR 0146): it re-seals no further credential then, and says how many it did and how
 * many are left under older keys.
 */
export async function resealCredentials(request: CredentialsReseal, output: CliOutput): Promise<number> {
  const { config } = request;
  const layout = new StorageLayout(config.storage.root);
  const lock = await request.lockRoot(layout);
  try {
    const store = await CredentialStore.open(layout, config.credentials);
    let lost = false;
    let resealed: number;
    try {
      resealed = await store.resealAll(async () => {
        // Read from the lock file before each write, not at the last heartbeat: a root taken over
        // meanwhile gets no further write from this process (test/integration/credentials-cli.test.ts).
        lost = !(await lock.stillHeld());
        return !lost;
      });
    } catch (error) {
      if (!(error instanceof CredentialRefused)) throw error;
      // The message leaves the credential out (a REST client sees it too); the operator needs the file.
      const file = layout.collectionFile("credentials", error.credentialId);
      output.err(`atrium: ${error.message} The credential is ${file}.\n`);
      return 1;
    }
    if (lost) {
      output.err(
        `atrium: ${lockLostSentence(layout.instanceLockFile())}. Re-sealed ${resealed} credential(s); ` +
          `${store.staleCount()} of ${store.count()} are still sealed under older key versions, so keep ` +
          "those in credentials.keys. Stop the process that holds the root now (the lock names it), then " +
          "run atrium credentials reseal again.\n",
      );
      return 1;
    }
    const newest = config.credentials?.newest;
    output.out(
      newest === undefined
        ? "No credentials are stored and credentials.keys is not set: nothing to re-seal.\n"
        : `Re-sealed ${resealed} of ${store.count()} stored credential(s); every one is now sealed ` +
            `under key version ${newest}, so older versions can be removed from credentials.keys.\n`,
    );
    return 0;
  } finally {
    await lock.release();
  }
}
