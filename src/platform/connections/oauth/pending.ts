import { Conflict, InvalidInput } from "../../../errors.ts";
import type { ConnectionsDeps } from "../connections-deps.ts";
import { type ConnectionRecord, checkScopes, newConnectionId } from "../model.ts";
import type { Authorizer, GoLink } from "./authorizer.ts";
import { reauthorizer } from "./record-home.ts";
import { untilStop } from "./until-stop.ts";

/**
 * A new OAuth connection's record in `pending_auth` (no snapshot until authorized), its first flow
 * started by whoever added it, and the record handed to `store` with its look's signal. Discovered
 * first: a server that cannot be authorized is refused before anything is stored. A look at the
 * server (server-looks.ts), as a static add's photograph is: a graceful stop cuts its discovery
 * and its client registration, refuses one that starts after it, and an add whose `store` checks
 * the signal under the store's lock writes nothing once the stop began; each answers 409
 * `stopping` (adr/0122, amended).
 */
export function addPendingOAuth(
  deps: Pick<ConnectionsDeps, "authorizer" | "clock" | "looks">,
  at: { workspaceId: string; name: string; url: string; scopes: string[]; createdBy: string; owner?: string },
  store: (record: ConnectionRecord, signal: AbortSignal) => Promise<void>,
): Promise<GoLink> {
  const { scopes, ...fields } = at;
  const what = "the add's discovery of its authorization server and client registration there";
  return untilStop(deps.looks, what, async (signal) => {
    const target = await deps.authorizer.discover(at.url, signal);
    const record: ConnectionRecord = {
      id: newConnectionId(),
      ...fields,
      auth: { kind: "oauth", issuer: target.issuer, scopes },
      createdAt: new Date(deps.clock()).toISOString(),
      authorizationGeneration: 1,
      snapshotVersion: 0,
      disabled: false,
    };
    // Its client registration is cut by the stop too, and records nothing then
    // (test/integration/connections-oauth-stop.test.ts "an OAuth add's client registration").
    const link = await deps.authorizer.start(record, { startedBy: at.createdBy, target, signal });
    try {
      await store(record, signal);
    } catch (error) {
      // Its flow leads nowhere (no record to activate) and would hold a slot of the flows for ten
      // minutes under an id no later add shares: a name taken meanwhile, or the stop.
      deps.authorizer.forget(record);
      throw error;
    }
    return link;
  });
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
