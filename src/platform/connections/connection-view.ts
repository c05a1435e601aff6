import { type ConnectionState, deriveState, type StoredAuth } from "./model.ts";
import type { ConnectionStore } from "./store.ts";

/** A connection as every API answers it: never a credential's value. */
export interface ConnectionView {
  name: string;
  url: string;
  auth:
    | { kind: "none" }
    | { kind: "static"; header: string }
    | { kind: "oauth"; scopes: string[]; issuer: string };
  state: ConnectionState;
  authorizationGeneration: number;
  createdAt: string;
  createdBy: string;
  /** `null` while pending_auth: an OAuth connection is photographed once it is authorized. */
  snapshot: {
    version: number;
    digest: string;
    protocolVersion: string;
    takenAt: string;
    tools: string[];
  } | null;
  health: { transport: unknown; credential: unknown };
}

/** A connection as its view: the record, its current snapshot's outline and both loops' last word. */
export async function viewConnection(
  store: ConnectionStore,
  workspaceId: string,
  name: string,
): Promise<ConnectionView> {
  const record = await store.get(workspaceId, name);
  const [snapshot, transport, credential] = await Promise.all([
    record.snapshotVersion === 0 ? undefined : store.snapshot(workspaceId, name, record.snapshotVersion),
    store.transport(workspaceId, name),
    store.credential(workspaceId, name),
  ]);
  return {
    name: record.name,
    url: record.url,
    auth: authView(record.auth),
    state: deriveState(record, transport, credential),
    authorizationGeneration: record.authorizationGeneration,
    createdAt: record.createdAt,
    createdBy: record.createdBy,
    snapshot: snapshot
      ? {
          version: snapshot.version,
          digest: snapshot.digest,
          protocolVersion: snapshot.protocolVersion,
          takenAt: snapshot.takenAt,
          tools: snapshot.tools.map((tool) => tool.name),
        }
      : null,
    health: { transport: transport.last ?? null, credential: credential.last ?? null },
  };
}

/** The auth a client sees: the kind and what is not secret (never a credential id or token). */
function authView(auth: StoredAuth): ConnectionView["auth"] {
  if (auth.kind === "static") return { kind: "static", header: auth.header };
  if (auth.kind === "oauth")
    return { kind: "oauth", scopes: auth.granted ?? auth.scopes, issuer: auth.issuer };
  return { kind: "none" };
}
