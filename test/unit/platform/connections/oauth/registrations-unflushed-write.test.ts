import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { clientFor } from "../../../../../src/platform/connections/oauth/client-identity.ts";
import type { AuthorizationTarget } from "../../../../../src/platform/connections/oauth/discovery.ts";
import { StoredRegistrations } from "../../../../../src/platform/connections/oauth/registrations.ts";
import { CredentialStore } from "../../../../../src/storage/credential-store.ts";
import { StorageLayout } from "../../../../../src/storage/paths.ts";
import { journalDuring } from "../../../../helpers/fs-journal.ts";
import { localTarget, serveLocally } from "../../../../helpers/local-http.ts";

// A dynamic registration's secret was sealed, then its record written: a record write that failed
// left the sealed secret named by nothing, and each retry registered again and left another. The
// record now names the secret's id first and the seal follows; a record whose secret is not there
// is registered again over (registrations.ts).

const KEYS = { keys: new Map([[1, randomBytes(32)]]), newest: 1 };
const REDIRECT = "https://atrium.example/v1/connections/oauth/callback";
const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

let root: string;
let layout: StorageLayout;
let vault: CredentialStore;
let server: { base: string; close(): Promise<void> };
let registered: number;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "atrium-registrations-unflushed-"));
  layout = new StorageLayout(root);
  vault = await CredentialStore.open(layout, KEYS);
  registered = 0;
  server = await serveLocally(() => {
    registered += 1;
    return {
      status: 201,
      json: {
        client_id: `atc_${registered}`,
        client_secret: `dcr-secret-${registered}`,
        redirect_uris: [REDIRECT],
      },
    };
  });
});

afterEach(async () => {
  await server.close();
  await rm(root, { recursive: true, force: true });
});

const register = () =>
  clientFor(
    localTarget(server.base, { registration_endpoint: `${server.base}/register` }) as AuthorizationTarget,
    {
      redirectUri: REDIRECT,
      configured: [],
      registrations: new StoredRegistrations(layout, vault, () => 0),
      fetch,
    },
  );

const flushFails = (
  collection: "credentials" | "connections/registrations",
  work: () => Promise<unknown>,
) => {
  const folder = layout.collectionDir(collection);
  return journalDuring(work, { sync: (path) => (path === folder ? eio() : undefined) });
};

/** The sealed credentials on disk, read at a boot. */
const sealedOnDisk = async () => (await CredentialStore.open(layout, KEYS)).count();

it("a registration whose record fails to be written leaves no sealed secret behind, however often it is tried", async () => {
  for (let attempt = 0; attempt < 2; attempt++) {
    await flushFails("connections/registrations", () => expect(register()).rejects.toThrow(/EIO/));
  }
  expect(await sealedOnDisk()).toBe(0);
  expect(vault.count()).toBe(0);
  const client = await register();
  expect(client.info).toEqual({ client_id: "atc_3", client_secret: "dcr-secret-3" });
  expect(await sealedOnDisk()).toBe(1);
  expect((await register()).info.client_id).toBe("atc_3");
});

it("a registration whose secret fails to be sealed keeps no record, and the next attempt registers again", async () => {
  await flushFails("credentials", () => expect(register()).rejects.toThrow(/EIO/));
  expect(await sealedOnDisk()).toBe(0);
  expect(await readdir(layout.collectionDir("connections/registrations")).catch(() => [])).toEqual([]);
  expect((await register()).info).toEqual({ client_id: "atc_2", client_secret: "dcr-secret-2" });
});

it("a record whose secret is not there (a crash between the two writes) is registered again over, not refused", async () => {
  await register();
  const [sealed] = await readdir(layout.collectionDir("credentials"));
  await vault.delete((sealed as string).replace(/\.json$/, ""));
  expect((await register()).info).toEqual({ client_id: "atc_2", client_secret: "dcr-secret-2" });
  expect(await sealedOnDisk()).toBe(1);
});
