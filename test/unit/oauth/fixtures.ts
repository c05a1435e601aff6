import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { derivePrincipalId, type Principal } from "../../../src/identity/principal.ts";
import { UserDirectory } from "../../../src/identity/users.ts";
import { createLogger } from "../../../src/log.ts";
import type { MemberOf } from "../../../src/oauth/grant-standing.ts";
import { Grants } from "../../../src/oauth/grants.ts";
import { StorageLayout } from "../../../src/storage/paths.ts";

export const PUBLIC_URL = "http://127.0.0.1:4555";
export const WORKSPACE = "ws_0123456789abcdef";
export const OTHER_WORKSPACE = "ws_fedcba9876543210";
export const RESOURCE = `${PUBLIC_URL}/mcp/${WORKSPACE}`;
export const OTHER_RESOURCE = `${PUBLIC_URL}/mcp/${OTHER_WORKSPACE}`;
export const ACCESS_TTL_SECONDS = 900;
export const REFRESH_TTL_SECONDS = 30 * 24 * 3600;
export const silentLog = createLogger("silent");

export function person(name: string): Principal {
  return { id: derivePrincipalId("test", name), displayName: name, email: null, orgRole: "member" };
}

/** A clock a test moves by hand. */
export interface TestClock {
  (): number;
  advance(ms: number): void;
}

export function testClock(start = Date.UTC(2026, 0, 1)): TestClock {
  let now = start;
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

/** A fresh data root with a user directory; `cleanup` removes it. */
export async function tempInstance(): Promise<{
  root: string;
  layout: StorageLayout;
  users: UserDirectory;
  cleanup: () => Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), "atrium-oauth-"));
  const layout = new StorageLayout(root);
  const users = new UserDirectory(layout);
  await users.load();
  return { root, layout, users, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/**
 * Members as a release before membership ids wrote them, joined when `joinedAt` says
 * (epoch ms; undefined: not a member): judged by their stamp (ADR 0169, amended).
 */
export function joinedAt(when: (workspaceId: string) => number | undefined): MemberOf {
  return (principalId, workspaceId) => {
    const at = when(workspaceId);
    return at === undefined
      ? undefined
      : { principalId, role: "member", addedAt: new Date(at).toISOString() };
  };
}

/** Everyone has been a member of every workspace since 1970. */
export const ALWAYS_A_MEMBER: MemberOf = joinedAt(() => 0);

export function newGrants(
  layout: StorageLayout,
  users: UserDirectory,
  clock: TestClock,
  memberOf: MemberOf = ALWAYS_A_MEMBER,
  {
    publicUrl = PUBLIC_URL,
    maxLiveGrantsPerPerson,
    refreshReuseGraceSeconds = 0,
    accessTokenTtlSeconds = ACCESS_TTL_SECONDS,
  }: {
    publicUrl?: string;
    maxLiveGrantsPerPerson?: number;
    refreshReuseGraceSeconds?: number;
    accessTokenTtlSeconds?: number;
  } = {},
): Grants {
  return new Grants(layout, {
    users,
    memberOf,
    resourceOf: (workspaceId) => `${publicUrl}/mcp/${workspaceId}`,
    ...(maxLiveGrantsPerPerson === undefined ? {} : { maxLiveGrantsPerPerson }),
    accessTokenTtlSeconds,
    refreshTokenTtlSeconds: REFRESH_TTL_SECONDS,
    // Off unless a test turns it on: a rotated-out token is judged at once, as before ADR 0136.
    refreshReuseGraceSeconds,
    log: silentLog,
    clock,
  });
}
