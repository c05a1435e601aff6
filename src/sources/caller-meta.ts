// Host-owned `_meta`: who is calling, and in which workspace, as the host (never the client)
// says. It travels only on the in-memory arm, where the bytes never leave the process; the
// router builds it from the gated request and drops any `_meta` a client sent.

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
}

export class MissingCaller extends Error {
  constructor() {
    super("This platform tool was called without the host's caller context.");
  }
}

/** Reads the caller a platform app is serving; throws when the host did not set one. */
export function callerFromMeta(meta: Record<string, unknown> | undefined): Caller {
  const value = meta?.[CALLER_META_KEY] as Partial<Caller> | undefined;
  if (typeof value?.principalId !== "string" || typeof value.workspaceId !== "string")
    throw new MissingCaller();
  const caller: Caller = { principalId: value.principalId, workspaceId: value.workspaceId };
  if (Array.isArray(value.scopes) && value.scopes.every((scope) => typeof scope === "string"))
    caller.scopes = value.scopes;
  return caller;
}
