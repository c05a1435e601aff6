import { Conflict, InvalidInput } from "../../../errors.ts";
import type { ConnectionsDeps } from "../connections-deps.ts";
import { type ConnectionRecord, checkScopes, newConnectionId } from "../model.ts";
import type { Authorizer, GoLink } from "./authorizer.ts";
import { reauthorizer } from "./record-home.ts";

/**
 * A new OAuth connection's record in `pending_auth` (no snapshot until authorized) and its first
 * flow, started by whoever added it. Discovered first: a server that cannot be authorized is
 * refused before anything is stored.
 */
export async function pendingOAuth(
  deps: Pick<ConnectionsDeps, "authorizer" | "clock">,
  at: { workspaceId: string; name: string; url: string; scopes: string[]; createdBy: string; owner?: string },
): Promise<{ record: ConnectionRecord; link: GoLink }> {
  const { scopes, ...fields } = at;
  const target = await deps.authorizer.discover(at.url);
  const record: ConnectionRecord = {
    id: newConnectionId(),
    ...fields,
    auth: { kind: "oauth", issuer: target.issuer, scopes },
    createdAt: new Date(deps.clock()).toISOString(),
    authorizationGeneration: 1,
    snapshotVersion: 0,
    disabled: false,
  };
  const link = await deps.authorizer.start(record, { startedBy: at.createdBy, target });
  return { record, link };
}

/** A new flow for an OAuth connection as it is now (shared or personal), `{scopes?}` to ask for others. */
export function reauthorize(
  authorizer: Authorizer,
  record: ConnectionRecord,
  startedBy: string,
  request: { scopes?: unknown },
): Promise<GoLink> {
  if (record.auth.kind !== "oauth") {
    throw new InvalidInput(
      `Connection "${record.name}" does not use OAuth; only an OAuth connection is authorized here.`,
    );
  }
  const scopes = request.scopes === undefined ? undefined : checkScopes(request.scopes);
  return authorizer.start(record, { startedBy, ...(scopes ? { scopes } : {}) });
}

/** A pending connection has no snapshot to serve, refresh or show until it is authorized. */
export function requireSnapshot(record: ConnectionRecord): void {
  if (record.snapshotVersion === 0) {
    throw new Conflict(
      "pending_auth",
      `Connection "${record.name}" is waiting for its first authorization; ${reauthorizer(record)} opens its go_url (or POST …/connections/${record.name}/oauth/start).`,
    );
  }
}
