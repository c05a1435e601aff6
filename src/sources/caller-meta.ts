// Host-owned `_meta`: who is calling, and in which workspace, as the host (never the client)
// says. It travels only on the in-memory arm, where the objects never leave the process; the
// dispatch builds it from the gated request (or the task run) and the router drops any `_meta` a
// client sent.

import type { AccessCheck } from "../workspace/access-check.ts";

/** Every host-owned `_meta` key starts with this; no client or remote server may set one. */
export const HOST_META_PREFIX = "dev.atrium/";
export const CALLER_META_KEY = `${HOST_META_PREFIX}caller`;

export interface Caller {
  principalId: string;
  workspaceId: string;
  /**
   * The scopes the caller's credential was granted, when it is scoped (an Atrium access token):
   * a task records them so its runs are refused what its creator's credential would be.
   */
  scopes?: readonly string[];
  /**
   * Asked by a store just before the one step that makes a write seen: throws the refusal the
   * caller's next request gets once their access has ended (adr/0154, amended). Built once per call
   * by the dispatch; a write for no person names `NO_CALLER` instead.
   */
  access: AccessCheck;
}

export class MissingCaller extends Error {
  constructor() {
    super("This platform tool was called without the host's caller context.");
  }
}

/**
 * Reads the caller a platform app is serving; throws when the host did not set one, its access check
 * included: the in-memory arm hands the dispatch's caller over as it is, and a caller with no check
 * would write after their access ended.
 */
export function callerFromMeta(meta: Record<string, unknown> | undefined): Caller {
  const value = meta?.[CALLER_META_KEY] as Partial<Caller> | undefined;
  if (
    typeof value?.principalId !== "string" ||
    typeof value.workspaceId !== "string" ||
    typeof value.access !== "function"
  )
    throw new MissingCaller();
  const caller: Caller = {
    principalId: value.principalId,
    workspaceId: value.workspaceId,
    access: value.access,
  };
  if (Array.isArray(value.scopes) && value.scopes.every((scope) => typeof scope === "string"))
    caller.scopes = value.scopes;
  return caller;
}
