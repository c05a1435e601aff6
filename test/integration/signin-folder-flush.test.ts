import { readdir } from "node:fs/promises";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { type OidcAtrium, startOidcAtrium } from "../helpers/oidc-atrium.ts";
import {
  signInOverHttp,
  signInUpToCallback,
  startOidcIssuer,
  type TestIssuer,
} from "../helpers/oidc-issuer.ts";

// A first sign-in makes the person's folder in `_instance/users/`, flushes it there, then writes
// their profile.json into it. When that flush failed, the folder stayed; the next sign-in found
// it, wrote the profile and answered as stored, and nothing ever flushed the folder's entry: a
// power loss could take the person's folder and profile away (ADR 0149).

let issuer: TestIssuer;
let running: OidcAtrium;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  running = await startOidcAtrium(issuer);
});

afterAll(async () => {
  await running?.stop();
  await issuer?.close();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });

describe("a first sign-in whose new folder cannot be flushed in users/", () => {
  it("is 500 leaving no folder, and the next sign-in makes it again and flushes it", async () => {
    const login = "folder-flush-fails";
    const id = derivePrincipalId(issuer.issuer, login);
    let failures = 1;
    let usersDir = "";
    const journal = await journalDuring(
      async () => {
        const { loginState, callback } = await signInUpToCallback(running.atrium.url, login);
        const refused = await fetch(callback, { redirect: "manual", headers: { cookie: loginState } });
        expect(refused.status).toBe(500);
        expect(await readdir(usersDir)).not.toContain(id);
        await signInOverHttp(running.atrium.url, login);
      },
      {
        sync: (path) => {
          if (!path.endsWith("/_instance/users")) return undefined;
          usersDir = path;
          return failures-- > 0 ? eio() : undefined;
        },
      },
    );
    const made = journal.entries.flatMap((entry) => (entry.op === "mkdir" ? [entry.path] : []));
    expect(made.filter((path) => path.endsWith(`/${id}`)).map(dirname)).toEqual([usersDir, usersDir]);
    expect(journal.unflushedFolders()).toEqual([]);
    expect(await readdir(usersDir)).toContain(id);
    expect(await running.atrium.users.get(id)).toMatchObject({ id });
  });
});
