import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { StoredCredential } from "../../src/storage/credential-store.ts";
import { startTestAtrium } from "../helpers/atrium.ts";
import { CREDENTIALS_SECTION, keyedDir } from "../helpers/credential-key.ts";
import { startRemoteServer } from "../helpers/remote-server.ts";

// A stored credential that stops opening while the server runs (changed on disk, or moved from
// another record) is an operator's or admin's fix, answered as one: never a bare 500.

const SECRET = "sk-live-refused-test";

describe("a stored credential that does not open", { timeout: 120_000 }, () => {
  it("refreshing its connection answers 503 credential_refused, saying what to fix and not the value", async ({
    onTestFinished,
  }) => {
    const dir = await keyedDir("atrium-credentials-refused-");
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const remote = await startRemoteServer({ requireHeader: { name: "x-api-key", value: SECRET } });
    onTestFinished(() => remote.stop());
    const atrium = await startTestAtrium({
      dir,
      sections: { credentials: CREDENTIALS_SECTION, connections: { allowPrivateAddresses: true } },
    });
    onTestFinished(() => atrium.close());
    const created = await atrium.rest("alice", "POST", "/v1/workspaces", { name: "ops" });
    const ws = ((await created.json()) as { id: string }).id;
    const added = await atrium.rest("alice", "POST", `/v1/workspaces/${ws}/connections`, {
      name: "gh",
      url: remote.url.href,
      auth: { kind: "static", header: "x-api-key", value: SECRET },
    });
    expect(added.status).toBe(201);

    const folder = join(atrium.root, "_instance", "credentials");
    const [file] = (await readdir(folder)).filter((name) => name.startsWith("cred_"));
    const path = join(folder, file as string);
    const stored = JSON.parse(await readFile(path, "utf8")) as StoredCredential;
    const ct = Buffer.from(stored.sealed.ct, "base64url");
    ct[0] = (ct[0] as number) ^ 1;
    await writeFile(
      path,
      JSON.stringify({ ...stored, sealed: { ...stored.sealed, ct: ct.toString("base64url") } }),
    );

    const refresh = await atrium.rest("alice", "POST", `/v1/workspaces/${ws}/connections/gh/tools/refresh`);
    expect(refresh.status).toBe(503);
    const body = (await refresh.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("credential_refused");
    expect(body.error.message).toContain("key listed as version 1");
    expect(body.error.message).toContain("remove the connection and add it");
    expect(body.error.message).not.toContain(SECRET);
    expect(body.error.message).not.toContain(stored.id);
  });
});
