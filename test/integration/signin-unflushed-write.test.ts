import { readdir } from "node:fs/promises";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivePrincipalId } from "../../src/identity/principal.ts";
import type { RunningAtrium } from "../../src/server.ts";
import { withFsHook } from "../helpers/fs-hook.ts";
import { journalDuring } from "../helpers/fs-journal.ts";
import { type OidcAtrium, startOidcAtrium } from "../helpers/oidc-atrium.ts";
import {
  accountOverrides,
  signInOverHttp,
  signInUpToCallback,
  startOidcIssuer,
  type TestIssuer,
  testAccount,
} from "../helpers/oidc-issuer.ts";

// A sign-in writes the person's profile.json when the provider states something new of them (a
// first sign-in, a new name), renaming the new file into place, then flushing their folder. When
// that flush failed, the profile was on disk and the directory held it, yet the sign-in answered
// 500 and started no session (ADR 0148, amended).

let issuer: TestIssuer;
let running: OidcAtrium;
let atrium: RunningAtrium;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  running = await startOidcAtrium(issuer);
  atrium = running.atrium;
});

afterAll(async () => {
  await running?.stop();
  await issuer?.close();
});

const eio = () => Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
const idOf = (login: string) => derivePrincipalId(issuer.issuer, login);

/** Signs `login` in over HTTP with every flush of their own folder failing. */
const signInFlushFailing = (login: string) => {
  let cookie = "";
  const folder = `/_instance/users/${idOf(login)}`;
  return journalDuring(
    async () => {
      cookie = await signInOverHttp(atrium.url, login);
    },
    { sync: (path) => (path.endsWith(folder) ? eio() : undefined) },
  ).then(() => cookie);
};

const bootstrapOf = async (cookie: string) => {
  const response = await fetch(`${atrium.url}/v1/bootstrap`, { headers: { cookie } });
  return { status: response.status, body: (await response.json()) as { principal?: unknown } };
};

describe("a sign-in whose profile write lands but whose folder flush fails", () => {
  it("a first sign-in is done: a session, and the directory knows the person", async () => {
    const login = "first-flush";
    const account = testAccount(login);
    const cookie = await signInFlushFailing(login);
    const known = { id: idOf(login), displayName: account.name, email: account.email, orgRole: "member" };
    expect(await atrium.users.get(idOf(login))).toEqual(known);
    expect(await bootstrapOf(cookie)).toMatchObject({ status: 200, body: { principal: known } });
  });

  it("a sign-in stating a new name is done, and the name is the one on disk", async () => {
    const login = "renamed-flush";
    await signInOverHttp(atrium.url, login);
    accountOverrides.set(login, { name: "Renamed Person" });
    try {
      const cookie = await signInFlushFailing(login);
      expect(await atrium.users.get(idOf(login))).toMatchObject({ displayName: "Renamed Person" });
      expect(await bootstrapOf(cookie)).toMatchObject({
        status: 200,
        body: { principal: { displayName: "Renamed Person" } },
      });
    } finally {
      accountOverrides.delete(login);
    }
  });
});

describe("a sign-in whose profile write does not land", () => {
  it("is 500 with no session, leaves nothing half-written, and the next sign-in works", async () => {
    const login = "rename-fails";
    const { loginState, callback } = await signInUpToCallback(atrium.url, login);
    let folder = "";
    const response = await withFsHook(
      "rename",
      (real) => (from, to) => {
        if (!String(to).endsWith(`/${idOf(login)}/profile.json`)) return real(from, to);
        folder = dirname(String(to));
        return Promise.reject(eio());
      },
      () => fetch(callback, { redirect: "manual", headers: { cookie: loginState } }),
    );
    expect(response.status).toBe(500);
    expect(response.headers.getSetCookie().some((c) => /atrium_session=./.test(c))).toBe(false);
    expect(await atrium.users.get(idOf(login))).toBeUndefined();
    expect(await readdir(folder)).toEqual([]);

    const cookie = await signInOverHttp(atrium.url, login);
    expect((await bootstrapOf(cookie)).status).toBe(200);
    expect(await atrium.users.get(idOf(login))).toMatchObject({ id: idOf(login) });
  });
});
